/**
 * The admin API under `/admin/api` (docs/server.md, "The admin API"), for tests, the demo and scripts. Authenticated with
 * the `PRIVATE-TOKEN` header: 401 when missing, 403 when wrong. Not part of the runner protocol.
 */
import type { IncomingMessage } from 'node:http';
import { hasCode } from '../util/errors.js';
import type { ServerContext } from './context.js';
import { bodyParams, mergeParams } from './http/body.js';
import { readBudgetedBody } from './http/guarded-body.js';
import { errorReply, json, type Reply } from './http/reply.js';
import { createPipeline } from './state/create-pipeline.js';
import { PIPELINE_SOURCES, type PipelineSource } from '../pipeline/context.js';
import { PipelineConfigError } from '../pipeline/parse-error.js';
import { artifactsFileReply } from './api/artifacts.js';
import { playBuild, retryBuild } from './state/play-retry.js';
import type { VariableFlags } from './state/store.js';
import { cancelBuild, shownStatus } from './state/transitions.js';
import { resourceGroupsAdmin } from './resource-groups-admin.js';
import { createRunnerReply, runnerAction, runnerAdminView } from './runner-admin.js';
import { sameSecret } from './tokens.js';
import { jobView, pipelineView } from './views.js';

const CONFIG_LIMIT = 4 * 1024 * 1024;

function id(text: string | undefined): number {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : -1;
}

/** Routes one admin request; `path` is relative to `/admin/api`. */
export async function handleAdmin(ctx: ServerContext, req: IncomingMessage, path: string, query: URLSearchParams, signal: AbortSignal): Promise<Reply> {
  const header = req.headers['private-token'];
  const token = Array.isArray(header) ? header[0] : header;
  if (token === undefined || token === '') return errorReply(401, '401 Unauthorized - send the admin token in the PRIVATE-TOKEN header');
  if (!sameSecret(token, ctx.settings.adminToken)) return errorReply(403);
  const method = req.method ?? 'GET';
  const parts = path.replace(/\.json$/, '').split('/').filter((part) => part !== '');
  const [resource, idText, action, extra] = parts;
  if (resource === 'projects' && action === 'resource_groups') return resourceGroupsAdmin(ctx, req, method, parts.slice(1), query, signal);
  if (extra !== undefined) return errorReply(404);

  if (resource === 'pipelines' && idText === undefined) {
    if (method === 'POST') return postPipeline(ctx, req, query, signal);
    if (method === 'GET') return json(200, [...ctx.store.pipelines.values()].map((p) => pipelineView(ctx, p)));
    return errorReply(405);
  }
  if (resource === 'pipelines' && action === undefined && method === 'GET') {
    const pipeline = ctx.store.pipelines.get(id(idText));
    return pipeline ? json(200, pipelineView(ctx, pipeline)) : errorReply(404, '404 Pipeline Not Found');
  }
  if (resource === 'jobs' && idText === undefined && method === 'GET') {
    const status = query.get('status');
    const builds = [...ctx.store.builds.values()].filter((build) => !status || shownStatus(build) === status);
    return json(200, builds.map(jobView));
  }
  if (resource === 'runners') return runnersAdmin(ctx, req, method, idText, action, signal);
  if (resource === 'projects' && idText === undefined && method === 'GET') {
    return json(
      200,
      [...ctx.store.projects.values()].map((p) => ({ id: p.id, name: p.name, path: p.path, runners_token: p.runnersToken, clone_url: `${ctx.baseUrl()}/${p.name}.git` })),
    );
  }
  if (resource !== 'jobs') return errorReply(404);
  const build = ctx.store.buildById(id(idText));
  if (!build) return errorReply(404, '404 Job Not Found');
  if (action === undefined && method === 'GET') return json(200, jobView(build));
  if (action === 'trace' && method === 'GET') {
    return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: await ctx.traces.read(build.id) };
  }
  if (action === 'cancel' && method === 'POST') {
    // A job whose runner cancels gracefully is `canceling` (after_script runs); `force` ends it at once.
    cancelBuild(ctx, build, { force: /^(1|true|yes)$/i.test(query.get('force') ?? '') });
    return json(200, jobView(build));
  }
  if ((action === 'play' || action === 'retry') && method === 'POST') {
    try {
      const result = action === 'play' ? playBuild(ctx, build) : retryBuild(ctx, build);
      return json(action === 'play' ? 200 : 201, jobView(result));
    } catch (error) {
      if (hasCode(error, 'JOB_NOT_PLAYABLE') || hasCode(error, 'JOB_NOT_RETRYABLE')) return errorReply(409, `409 Conflict - ${(error as Error).message}`);
      throw error;
    }
  }
  if (action === 'artifacts' && method === 'GET') {
    return artifactsFileReply(build);
  }
  return errorReply(404);
}

/**
 * Pipeline variables: `{NAME: value}` (a string, number or boolean; sent masked) or
 * `{NAME: {value, masked?, file?, raw?}}`. A string saying what is wrong when one is not.
 */
function readPipelineVariables(given: Record<string, unknown>): { values: Record<string, string>; flags: Record<string, VariableFlags> } | string {
  const values: Record<string, string> = {};
  const flags: Record<string, VariableFlags> = {};
  for (const [key, raw] of Object.entries(given)) {
    const form = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : { value: raw };
    const { value, masked, file, raw: literal, ...rest } = form;
    const extra = Object.keys(rest);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || !['string', 'number', 'boolean'].includes(typeof value) || extra.length > 0) {
      return `variable "${key}" must have a name like MY_VAR and a string value, or {"value", "masked", "file", "raw"}${extra.length > 0 ? ` (not ${extra.join(', ')})` : ''}`;
    }
    for (const [name, flag] of [['masked', masked], ['file', file], ['raw', literal]] as const) {
      if (flag !== undefined && typeof flag !== 'boolean') return `variable "${key}": "${name}" must be true or false`;
    }
    values[key] = String(value);
    const set: VariableFlags = { ...(masked === false ? { masked: false } : {}), ...(file === true ? { file: true } : {}), ...(literal === true ? { raw: true } : {}) };
    if (Object.keys(set).length > 0) flags[key] = set;
  }
  return { values, flags };
}

/**
 * `GET /runners`, `POST /runners` (a new runner: its `glrt-` token in this answer only),
 * `DELETE /runners/:id`, `POST /runners/:id/pause|resume|reset_token`.
 */
async function runnersAdmin(ctx: ServerContext, req: IncomingMessage, method: string, idText: string | undefined, action: string | undefined, signal: AbortSignal): Promise<Reply> {
  if (idText === undefined) {
    if (method === 'GET') return json(200, [...ctx.store.runners.values()].map((runner) => runnerAdminView(ctx, runner)));
    if (method === 'POST') return createRunnerReply(ctx, await formParams(ctx, req, signal));
    return errorReply(405);
  }
  const verb = action ?? (method === 'DELETE' ? 'delete' : undefined);
  if (verb === undefined || (verb === 'delete') !== (method === 'DELETE') || (verb !== 'delete' && method !== 'POST')) return errorReply(404);
  const result = runnerAction(ctx, id(idText), verb);
  if (!result.ok) return result.reply;
  if (result.deleted) return { status: 204 };
  return json(200, { ...runnerAdminView(ctx, result.runner), ...(result.token ? { token: result.token, token_expires_at: result.runner.tokenExpiresAt ?? null } : {}) });
}

async function formParams(ctx: ServerContext, req: IncomingMessage, signal: AbortSignal): Promise<Record<string, unknown>> {
  return bodyParams(req, await readBudgetedBody(req, 64 * 1024, ctx.bodies.main, signal));
}

async function postPipeline(ctx: ServerContext, req: IncomingMessage, query: URLSearchParams, signal: AbortSignal): Promise<Reply> {
  const params = mergeParams(query, await bodyParams(req, await readBudgetedBody(req, CONFIG_LIMIT, ctx.bodies.main, signal)));
  const { project, ref, config, variables, source } = params;
  if (typeof config !== 'string' || config.trim() === '') return errorReply(400, '400 Bad Request - "config" (the pipeline YAML text) is required');
  const names = [...ctx.store.projects.values()].map((p) => p.name);
  const projectName = typeof project === 'string' && project !== '' ? project : names[0];
  if (projectName === undefined) return errorReply(400, '400 Bad Request - no projects are configured; start the server with --project NAME=PATH');
  if (ref !== undefined && typeof ref !== 'string') return errorReply(400, '400 Bad Request - "ref" must be a string');
  if (source !== undefined && (typeof source !== 'string' || !(PIPELINE_SOURCES as readonly string[]).includes(source))) {
    return errorReply(400, `400 Bad Request - "source" must be one of ${PIPELINE_SOURCES.join(', ')}`);
  }
  if (variables !== undefined && (variables === null || typeof variables !== 'object' || Array.isArray(variables))) {
    return errorReply(400, '400 Bad Request - "variables" must be an object of strings');
  }
  const read = readPipelineVariables((variables ?? {}) as Record<string, unknown>);
  if (typeof read === 'string') return errorReply(400, `400 Bad Request - ${read}`);
  try {
    const pipeline = await createPipeline(
      ctx,
      {
        project: projectName,
        config,
        ...(ref ? { ref } : {}),
        ...(variables ? { variables: read.values, variableFlags: read.flags } : {}),
        ...(source ? { source: source as PipelineSource } : {}),
      },
      signal,
    );
    return json(201, pipelineView(ctx, pipeline));
  } catch (error) {
    // Every problem of an invalid file, each with its job and key, for clients that list them.
    if (error instanceof PipelineConfigError) return json(400, { message: error.message, problems: error.problems });
    if (hasCode(error, 'PIPELINE_INVALID') || hasCode(error, 'REF_NOT_FOUND') || hasCode(error, 'PIPELINE_FILTERED')) {
      return errorReply(400, (error as Error).message);
    }
    if (hasCode(error, 'PROJECT_NOT_FOUND')) return errorReply(404, (error as Error).message);
    throw error;
  }
}
