/**
 * What a person does to a job (admin API, web page): play a manual job (or start a delayed one now)
 * and retry a finished one. Both answer `JOB_NOT_PLAYABLE` / `JOB_NOT_RETRYABLE` with a message
 * saying why, when the job is in no state for it.
 */
import { CiRunnerError } from '../../util/errors.js';
import type { ServerContext } from '../context.js';
import { queuedStatus } from './resource-groups.js';
import { newAttempt } from './retry.js';
import type { BuildRecord } from './store.js';
import { advancePipeline } from './transitions.js';

/** Queues a `manual` build, or a `scheduled` (delayed) one without waiting for its time. Returns it. */
export function playBuild(ctx: ServerContext, build: BuildRecord): BuildRecord {
  if (build.status !== 'manual' && build.status !== 'scheduled') {
    throw new CiRunnerError('JOB_NOT_PLAYABLE', `job ${build.id} (${build.job.name}) is ${build.status}; only manual jobs and delayed jobs waiting for their time can be played`);
  }
  ctx.store.changeBuild(build, (b) => {
    b.status = queuedStatus(b);
    b.lastActivityAt = Date.now();
  });
  ctx.logger.info({ buildId: build.id }, 'build played');
  // Starts it if it is a trigger job, gives it its resource group if free, wakes the runners' polls.
  advancePipeline(ctx, build.pipelineId);
  ctx.scheduler.buildsQueued();
  return build;
}

/**
 * Retries a finished build (failed, canceled or success) as a new build of the same job in the same
 * pipeline, and returns the new build. Jobs skipped because of the old one are reconsidered. A
 * retried manual job runs: the person asking for it is what it was waiting for.
 */
export function retryBuild(ctx: ServerContext, build: BuildRecord): BuildRecord {
  if (build.retried) throw new CiRunnerError('JOB_NOT_RETRYABLE', `job ${build.id} (${build.job.name}) was already retried; retry its latest build`);
  if (!['failed', 'canceled', 'success'].includes(build.status)) {
    throw new CiRunnerError('JOB_NOT_RETRYABLE', `job ${build.id} (${build.job.name}) is ${build.status}; only failed, canceled or successful jobs can be retried`);
  }
  const next = newAttempt(ctx, build);
  ctx.logger.info({ buildId: build.id, retryId: next.id }, 'build retried');
  advancePipeline(ctx, build.pipelineId);
  if (next.status === 'manual') playBuild(ctx, next);
  return next;
}
