/**
 * The admin API under `/admin/api` (README, "The reference server"), for tests, the demo and scripts. Authenticated with
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
import { cancelBuild } from './state/transitions.js';
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
  if (token !== ctx.settings.adminToken) return errorReply(403);
  const method = req.method ?? 'GET';
  const parts = path.replace(/\.json$/, '').split('/').filter((part) => part !== '');
  const [resource, idText, action, extra] = parts;
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
    const builds = [...ctx.store.builds.values()].filter((build) => !status || build.status === status);
    return json(200, builds.map(jobView));
  }
  if (resource === 'runners' && idText === undefined && method === 'GET') {
    return json(
      200,
      [...ctx.store.runners.values()].map((r) => ({ id: r.id, description: r.description, tags: r.tags, run_untagged: r.runUntagged, locked: r.locked, active: r.active, project_id: r.projectId, contacted_at: r.contactedAt?.toISOString() ?? null })),
    );
  }
  if (resource === 'runners' && (action === 'pause' || action === 'resume') && method === 'POST') {
    const runner = ctx.store.runners.get(id(idText));
    if (!runner) return errorReply(404, '404 Runner Not Found');
    runner.active = action === 'resume';
    ctx.store.saveRunner(runner);
    if (runner.active) ctx.scheduler.buildsQueued();
    return json(200, { id: runner.id, active: runner.active });
  }
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
    cancelBuild(ctx, build);
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
  for (const [key, value] of Object.entries((variables ?? {}) as Record<string, unknown>)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || !['string', 'number', 'boolean'].includes(typeof value)) {
      return errorReply(400, `400 Bad Request - variable "${key}" must have a name like MY_VAR and a string value`);
    }
  }
  try {
    const pipeline = await createPipeline(
      ctx,
      {
        project: projectName,
        config,
        ...(ref ? { ref } : {}),
        ...(variables ? { variables: variables as Record<string, string> } : {}),
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
