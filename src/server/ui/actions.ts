/**
 * The page's buttons. Each is a POST (checked for its CSRF token by the router before it gets
 * here) answering JSON: what changed, or `{message}` with a 4xx saying why nothing did.
 */
import type { IncomingMessage } from 'node:http';
import { hasCode } from '../../util/errors.js';
import type { ServerContext } from '../context.js';
import { bodyParams } from '../http/body.js';
import { readBudgetedBody } from '../http/guarded-body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { createPipeline } from '../state/create-pipeline.js';
import { playBuild, retryBuild } from '../state/play-retry.js';
import type { BuildRecord } from '../state/store.js';
import { cancelBuild } from '../state/transitions.js';
import { createRunnerFromForm, runnerAction as adminRunnerAction } from '../runner-admin.js';
import { jobDetail, pipelineDetail, runnerDetail } from './views.js';

const FORM_LIMIT = 64 * 1024;
const PIPELINE_FILE = '.gitlab-ci.yml';

/** cancel, retry or play one job. */
export function jobAction(ctx: ServerContext, build: BuildRecord, action: string): Reply {
  if (action === 'cancel') {
    if (!cancelBuild(ctx, build)) return errorReply(409, `job #${build.id} is ${build.status}; only a job that has not finished can be canceled`);
    return json(200, { job: jobDetail(ctx, build) });
  }
  try {
    if (action === 'play') return json(200, { job: jobDetail(ctx, playBuild(ctx, build)) });
    if (action === 'retry') return json(201, { job: jobDetail(ctx, retryBuild(ctx, build)) });
  } catch (error) {
    // Not playable or retryable in its state: say why, as for cancel.
    if (hasCode(error, 'JOB_NOT_PLAYABLE') || hasCode(error, 'JOB_NOT_RETRYABLE')) return errorReply(409, (error as Error).message);
    throw error;
  }
  return errorReply(404);
}

/** Creates a runner (the modern way): the answer carries its `glrt-` token, which the page shows once. */
export async function newRunner(ctx: ServerContext, req: IncomingMessage, signal: AbortSignal): Promise<Reply> {
  const params = await bodyParams(req, await readBudgetedBody(req, FORM_LIMIT, ctx.bodies.main, signal));
  const created = createRunnerFromForm(ctx, params);
  if (!created.ok) return created.reply;
  return json(201, { runner: runnerDetail(ctx, created.runner), token: created.runner.token });
}

/** pause, resume, reset_token or delete a runner. */
export function runnerAction(ctx: ServerContext, runnerId: number, action: string): Reply {
  const result = adminRunnerAction(ctx, runnerId, action);
  if (!result.ok) return result.reply;
  if (result.deleted) return json(200, { deleted: runnerId });
  return json(200, { runner: runnerDetail(ctx, result.runner), ...(result.token ? { token: result.token } : {}) });
}

/** The pipeline file of `path` at `ref`, or undefined when the commit has none. */
async function pipelineFile(path: string, sha: string, signal: AbortSignal): Promise<string | undefined> {
  const { execa } = await import('execa'); // loaded on first use, as the rest of the git side is
  const result = await execa('git', ['-C', path, 'show', `${sha}:${PIPELINE_FILE}`], { reject: false, stdin: 'ignore', cancelSignal: signal, maxBuffer: 4 * 1024 * 1024 });
  return result.exitCode === 0 ? result.stdout : undefined;
}

/** Runs a new pipeline from the `.gitlab-ci.yml` a project has at a ref. */
export async function runPipeline(ctx: ServerContext, req: IncomingMessage, signal: AbortSignal): Promise<Reply> {
  const params = await bodyParams(req, await readBudgetedBody(req, FORM_LIMIT, ctx.bodies.main, signal));
  const projectName = typeof params.project === 'string' ? params.project : '';
  const ref = typeof params.ref === 'string' && params.ref.trim() !== '' ? params.ref.trim() : 'main';
  const project = ctx.store.projectByName(projectName);
  if (!project) return errorReply(404, `unknown project "${projectName}"`);
  const variables: Record<string, string> = {};
  const given = params.variables;
  if (given !== undefined && (given === null || typeof given !== 'object' || Array.isArray(given))) return errorReply(400, '"variables" must be an object of strings');
  for (const [key, value] of Object.entries((given ?? {}) as Record<string, unknown>)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || typeof value !== 'string') return errorReply(400, `variable "${key}" needs a name like MY_VAR and a text value`);
    variables[key] = value;
  }
  const { resolveRef } = await import('../git/refs.js');
  let sha: string;
  try {
    sha = (await resolveRef(project.path, ref, signal)).sha;
  } catch (error) {
    if (hasCode(error, 'REF_NOT_FOUND')) return errorReply(400, (error as Error).message);
    throw error;
  }
  const config = await pipelineFile(project.path, sha, signal);
  if (config === undefined) return errorReply(400, `${project.name} has no ${PIPELINE_FILE} at ${ref} (${sha.slice(0, 8)})`);
  try {
    const pipeline = await createPipeline(ctx, { project: project.name, ref, config, variables, source: 'web' }, signal);
    return json(201, { pipeline: pipelineDetail(ctx, pipeline) });
  } catch (error) {
    if (hasCode(error, 'PIPELINE_INVALID') || hasCode(error, 'PIPELINE_FILTERED') || hasCode(error, 'REF_NOT_FOUND')) return errorReply(400, (error as Error).message);
    throw error;
  }
}
