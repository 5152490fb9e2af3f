/**
 * V6 `POST /jobs/request` (docs/protocol-v4.md §3), with long polling as GitLab Workhorse does it:
 * a request whose `last_update` equals the runner's current queue value is held until a job is queued
 * for it or the long-poll time ends; one without `last_update` (a runner's first poll) or with another
 * value is answered at once. Every answer without a job says the current value in
 * `X-GitLab-Last-Update`.
 */
import { dropUnsupported } from '../../state/transitions.js';
import type { ServerContext } from '../../context.js';
import { stringParam } from '../../http/body.js';
import { errorReply, json, type Reply } from '../../http/reply.js';
import { contactProblem, noteContact } from '../../state/runner-contact.js';
import type { RunnerRecord } from '../../state/store.js';
import { readParams, type ApiRequest } from '../request.js';
import { callingRunner, runnerGateV4 } from './auth.js';
import { v4Payload } from './payload.js';

const LONG_POLLING = { 'gitlab-ci-builds-polling': 'yes' };

function noJob(value: string, polling: boolean): Reply {
  return { status: 204, headers: { 'x-gitlab-last-update': value, ...(polling ? LONG_POLLING : {}) } };
}

export async function requestJob(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, runnerGateV4(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const runner = callingRunner(ctx, request, params);
  if (!runner) return errorReply(403);
  const systemId = stringParam(params, 'system_id');
  const problem = contactProblem(params.info, systemId);
  if (problem) return errorReply(400, `400 Bad Request - ${problem}`);
  noteContact(ctx.store, runner, { info: params.info, systemId, api: 'v4' });
  const polling = ctx.settings.longPollMs > 0;
  // A paused runner is told "nothing for you" (GitLab: 204), not refused.
  if (!runner.active) return noJob(ctx.scheduler.currentQueueValue(runner), polling);
  const lastUpdate = stringParam(params, 'last_update');
  if (polling && lastUpdate !== undefined) await holdWhileUnchanged(ctx, request, runner, lastUpdate);
  if (request.signal.aborted) return noJob(ctx.scheduler.currentQueueValue(runner), polling);
  // Read the value before searching: a job queued during the search ticks it, so the next request searches again.
  const value = ctx.scheduler.currentQueueValue(runner);
  if (lastUpdate === value || !ctx.store.runners.has(runner.id) || !runner.active) return noJob(value, polling);
  const graceful = runner.features?.cancel_gracefully === true;
  const build = ctx.scheduler.pick(
    runner,
    (b) => {
      if (graceful) b.cancelGracefully = true;
    },
    (b, missing) => dropUnsupported(ctx, b, missing),
  );
  if (!build) return noJob(value, polling);
  if (systemId !== undefined) build.managerSystemId = systemId;
  ctx.logger.info({ buildId: build.id, runnerId: runner.id, api: 'v4' }, 'build assigned');
  return json(201, v4Payload(ctx, build), polling ? LONG_POLLING : {});
}

/** Waits while the runner's queue value is still `lastUpdate`, up to the long-poll time. */
async function holdWhileUnchanged(ctx: ServerContext, request: ApiRequest, runner: RunnerRecord, lastUpdate: string): Promise<void> {
  const deadline = Date.now() + ctx.settings.longPollMs;
  while (ctx.scheduler.currentQueueValue(runner) === lastUpdate && !request.signal.aborted && runner.active && ctx.store.runners.has(runner.id)) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return;
    await ctx.scheduler.waitForWork(remaining, request.signal);
  }
}
