/**
 * Build state changes that ripple: finishing or canceling a build advances its pipeline, a failed
 * build whose `retry:` allows it is replaced by a new attempt, and any build that becomes pending
 * ticks the queue values and wakes long polls.
 */
import type { ServerContext } from '../context.js';
import { processPipeline } from './pipeline-progress.js';
import { armDelayedBuilds } from './delayed.js';
import type { JobOutcome } from './job-outcome.js';
import { newAttempt, shouldRetry } from './retry.js';
import type { BuildRecord } from './store.js';

/** Advances the build's pipeline and wakes the scheduler if something was queued. */
export function advancePipeline(ctx: ServerContext, pipelineId: number): void {
  const pipeline = ctx.store.pipelines.get(pipelineId);
  if (!pipeline) return;
  const queued = processPipeline(ctx.store, pipeline);
  try {
    for (const build of ctx.store.pipelineBuilds(pipeline)) ctx.store.saveBuild(build);
  } catch (error) {
    // The build that caused this is recorded; these follow from it and are recorded again (they
    // still differ from what is on disk) the next time this pipeline moves.
    ctx.logger.error({ err: error, pipelineId }, 'could not record the pipeline\'s next builds in the data dir');
  }
  armDelayedBuilds(ctx, pipeline);
  // Trigger jobs are the server's to run; a child pipeline's moves may end its trigger job.
  for (const build of ctx.store.pipelineBuilds(pipeline)) if (build.status === 'pending' && build.job.trigger) ctx.bridges?.start(build);
  if (pipeline.parent) ctx.bridges?.childMoved(pipeline);
  if (queued) ctx.scheduler.buildsQueued();
}

/**
 * Ends a running build with the runner's verdict or a server-side failure. `outcome` is what the
 * trace told (failure reason, coverage); a failure the job's `retry:` covers gets a new attempt,
 * created before the pipeline moves on so that nothing after the job is skipped meanwhile.
 */
export function finishBuild(ctx: ServerContext, build: BuildRecord, status: 'success' | 'failed', reason?: string, outcome: JobOutcome = {}): void {
  if (build.status !== 'running' && build.status !== 'pending') return;
  ctx.store.changeBuild(build, (b) => {
    b.status = status;
    b.finishedAt = new Date();
    if (status === 'failed') b.failureReason = outcome.failureReason ?? 'unknown_failure';
    if (outcome.coverage !== undefined) b.coverage = outcome.coverage;
    if (status === 'failed' && outcome.exitCode !== undefined) b.exitCode = outcome.exitCode;
  });
  ctx.logger.info({ buildId: build.id, status, ...(reason ? { reason } : {}), ...(build.failureReason ? { failureReason: build.failureReason } : {}) }, 'build finished');
  if (status === 'failed' && shouldRetry(build)) {
    const next = newAttempt(ctx, build);
    ctx.logger.info({ buildId: build.id, retryId: next.id, attempt: next.attempt }, 'build retried (retry:)');
  }
  advancePipeline(ctx, build.pipelineId);
}

/**
 * Cancels a build that has not finished (created, pending, running, manual, scheduled). A running
 * build learns it from `Build-Status: canceled` on its next PATCH, or a 404 on its next PUT.
 */
export function cancelBuild(ctx: ServerContext, build: BuildRecord): boolean {
  if (!['created', 'pending', 'running', 'manual', 'scheduled'].includes(build.status)) return false;
  ctx.store.changeBuild(build, (b) => {
    b.status = 'canceled';
    b.finishedAt = new Date();
  });
  ctx.logger.info({ buildId: build.id }, 'build canceled');
  advancePipeline(ctx, build.pipelineId);
  return true;
}
