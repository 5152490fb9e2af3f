/**
 * E4 (request a build, with the `last_update` short-circuit and optional long polling) and E5/E3
 * (update a build; `PUT /builds/-1` is the legacy verify trick), docs/protocol-v1.md §4.3–§4.5.
 */
import type { ServerContext } from '../context.js';
import { stringParam } from '../http/body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { buildPayload } from './payload.js';
import { dropUnsupported, finishReported } from '../state/transitions.js';
import { contactProblem, noteContact } from '../state/runner-contact.js';
import { readParams, runnerGate, TRACE_BODY_LIMIT, type ApiRequest } from './request.js';

function noBuild(value: string): Reply {
  return { status: 204, headers: { 'x-gitlab-last-update': value } };
}

export async function requestBuild(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, runnerGate(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const runner = ctx.store.runnerByToken(stringParam(params, 'token'));
  if (!runner) return errorReply(403);
  const problem = contactProblem(params.info, undefined);
  if (problem) return errorReply(400, `400 (Bad request) ${problem}`);
  if (!runner.active) return errorReply(404);
  noteContact(ctx.store, runner, { info: params.info, api: 'v1' });
  const lastUpdate = stringParam(params, 'last_update');
  const deadline = Date.now() + ctx.settings.longPollMs;
  for (;;) {
    // Read the queue value before searching: a build queued during the search ticks it, so the
    // runner's next poll searches again (§4.4.1).
    const value = ctx.scheduler.currentQueueValue(runner);
    if (lastUpdate !== value) {
      const build = ctx.scheduler.pick(runner, undefined, (b, missing) => dropUnsupported(ctx, b, missing));
      if (build) {
        ctx.logger.info({ buildId: build.id, runnerId: runner.id }, 'build assigned');
        return json(201, buildPayload(ctx, build));
      }
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0 || request.signal.aborted || !ctx.store.runners.has(runner.id) || !runner.active) return noBuild(value);
    await ctx.scheduler.waitForWork(remaining, request.signal);
    if (request.signal.aborted) return noBuild(ctx.scheduler.currentQueueValue(runner));
  }
}

export async function updateBuild(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, runnerGate(ctx, request), TRACE_BODY_LIMIT);
  if (!read.ok) return read.reply;
  const { params } = read;
  const runner = ctx.store.runnerByToken(stringParam(params, 'token'));
  if (!runner) return errorReply(403);
  const problem = contactProblem(params.info, undefined);
  if (problem) return errorReply(400, `400 (Bad request) ${problem}`);
  noteContact(ctx.store, runner, { info: params.info });
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build || build.runnerId !== runner.id || build.status !== 'running') return errorReply(404, '404 Not found');
  build.lastActivityAt = Date.now();
  const trace = params.trace;
  if (trace !== undefined && trace !== null) {
    if (typeof trace !== 'string') return errorReply(400, '400 (Bad request) "trace" must be a string');
    await ctx.traces.replace(build, Buffer.from(trace, 'utf8'), secretsOf(ctx, build.token, build.projectId));
  }
  const state = params.state;
  // The build may have been canceled while the trace was being written; only a running build moves.
  // The final update carries the whole trace (or follows the last PATCH): it is complete now.
  if ((state === 'success' || state === 'failed') && build.status === 'running') await finishReported(ctx, build, state);
  return json(200, {});
}

/** What the server masks in stored traces (§7.8): the build token and the project's runners token. */
export function secretsOf(ctx: ServerContext, buildToken: string, projectId: number): string[] {
  const project = ctx.store.projects.get(projectId);
  return project ? [buildToken, project.runnersToken] : [buildToken];
}
