/**
 * Build state changes that ripple: finishing or canceling a build advances its pipeline, a failed
 * build whose `retry:` allows it is replaced by a new attempt, and any build that becomes pending
 * ticks the queue values and wakes long polls.
 */
import type { ServerContext } from '../context.js';
import { currentBuilds, processPipeline } from './pipeline-progress.js';
import { armDelayedBuilds } from './delayed.js';
import { readOutcome, type JobOutcome } from './job-outcome.js';
import { newAttempt, shouldRetry } from './retry.js';
import { failureAllowed } from './composite-status.js';
import { assignResources } from './resource-groups.js';
import type { BuildRecord, RunnerRecord } from './store.js';

/** The states a build has not finished in: a cancel ends them. */
export const UNFINISHED_STATUSES: ReadonlySet<string> = new Set(['created', 'waiting_for_resource', 'pending', 'running', 'manual', 'scheduled']);

/**
 * Advances the build's pipeline, gives free resource groups to waiting jobs (of any pipeline: the
 * build that moved may have held one), and wakes the scheduler if something was queued.
 */
export function advancePipeline(ctx: ServerContext, pipelineId: number): void {
  const pipeline = ctx.store.pipelines.get(pipelineId);
  if (!pipeline) return;
  let queued = processPipeline(ctx.store, pipeline);
  try {
    for (const build of ctx.store.pipelineBuilds(pipeline)) ctx.store.saveBuild(build);
  } catch (error) {
    // The build that caused this is recorded; these follow from it and are recorded again (they
    // still differ from what is on disk) the next time this pipeline moves.
    ctx.logger.error({ err: error, pipelineId }, 'could not record the pipeline\'s next builds in the data dir');
  }
  armDelayedBuilds(ctx, pipeline);
  for (const build of assignResources(ctx.store)) {
    queued = true;
    ctx.logger.info({ buildId: build.id, resourceGroup: build.job.resourceGroup }, 'build got its resource group');
    if (build.pipelineId !== pipeline.id && build.job.trigger) ctx.bridges?.start(build);
  }
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
  } else if (status === 'failed') {
    cancelOnJobFailure(ctx, build);
  }
  // Also gives the resource group this build held to the next job waiting for it.
  advancePipeline(ctx, build.pipelineId);
}

/**
 * Cancels a build that has not finished (`UNFINISHED_STATUSES`). A running
 * build whose runner announced `cancel_gracefully` (API v4) is only marked `canceling` unless `force`:
 * it goes on running (its `after_script`) and ends `canceled` when its runner reports
 * (`finishReported`); a second cancel forces it. Any other running build is `canceled` at once, and
 * its runner learns it from its next trace PATCH (`Build-Status`/`Job-Status: canceled`) or update.
 */
export function cancelBuild(ctx: ServerContext, build: BuildRecord, options: { force?: boolean } = {}): boolean {
  if (!cancelWithoutAdvancing(ctx, build, options)) return false;
  if (build.status === 'canceled') advancePipeline(ctx, build.pipelineId);
  return true;
}

/**
 * Cancels several builds at once, as GitLab cancels a pipeline: each unfinished one is canceled before
 * any pipeline moves on (else a later job would be `skipped` for an earlier one's cancel, not canceled).
 */
export function cancelBuilds(ctx: ServerContext, builds: readonly BuildRecord[], options: { force?: boolean } = {}): void {
  const moved = new Set<number>();
  for (const build of builds) if (cancelWithoutAdvancing(ctx, build, options) && build.status === 'canceled') moved.add(build.pipelineId);
  for (const pipelineId of moved) advancePipeline(ctx, pipelineId);
}

function cancelWithoutAdvancing(ctx: ServerContext, build: BuildRecord, options: { force?: boolean }): boolean {
  if (!UNFINISHED_STATUSES.has(build.status)) return false;
  if (build.status === 'running' && build.cancelGracefully && !build.canceling && options.force !== true) {
    ctx.store.changeBuild(build, (b) => {
      b.canceling = true;
    });
    ctx.logger.info({ buildId: build.id }, 'build canceling: its runner stops the script and runs after_script');
    return true;
  }
  ctx.store.changeBuild(build, (b) => {
    b.status = 'canceled';
    b.finishedAt = new Date();
    b.canceling = undefined;
  });
  ctx.logger.info({ buildId: build.id }, 'build canceled');
  return true;
}

/** A build's status as runners, the admin API and the web page are told: `canceling` while a graceful cancel runs. */
export function shownStatus(build: BuildRecord): string {
  return build.status === 'running' && build.canceling ? 'canceling' : build.status;
}

/** What a runner's final update says beyond its state (API v4 sends both; v1 neither). */
export interface FinalReport {
  failureReason?: string;
  exitCode?: number;
}

/**
 * Ends a running build as its runner reported it, the one path of both APIs' final update. The
 * stored trace gives the coverage (and, when the runner did not say, the failure reason and exit
 * code); a build being canceled gracefully ends `canceled` whatever its script did.
 */
export async function finishReported(ctx: ServerContext, build: BuildRecord, state: 'success' | 'failed', report: FinalReport = {}): Promise<void> {
  const fromTrace: JobOutcome = await readOutcome(ctx, build, state === 'failed').catch((error: unknown) => {
    ctx.logger.warn({ err: error, buildId: build.id }, 'could not read the trace for the failure reason and coverage');
    return {};
  });
  // The build may have been canceled (or finished by the sweeper) while the trace was read.
  if (build.status !== 'running') return;
  if (build.canceling) {
    ctx.store.changeBuild(build, (b) => {
      b.status = 'canceled';
      b.finishedAt = new Date();
      b.canceling = undefined;
      if (fromTrace.coverage !== undefined) b.coverage = fromTrace.coverage;
    });
    ctx.logger.info({ buildId: build.id, reported: state }, 'build canceled (its runner finished after_script)');
    advancePipeline(ctx, build.pipelineId);
    return;
  }
  const outcome: JobOutcome = {
    ...fromTrace,
    ...(report.failureReason !== undefined ? { failureReason: report.failureReason } : {}),
    ...(report.exitCode !== undefined ? { exitCode: report.exitCode } : {}),
  };
  finishBuild(ctx, build, state, undefined, outcome);
}

/**
 * Deletes a runner (either API's unregister, the admin API, the web page). Builds it was running can
 * never be reported again: they fail now.
 */
export function deleteRunner(ctx: ServerContext, runner: RunnerRecord): void {
  ctx.store.deleteRunner(runner.id);
  for (const build of ctx.store.builds.values()) {
    if (build.runnerId === runner.id && build.status === 'running') finishBuild(ctx, build, 'failed', 'runner deleted');
  }
  ctx.logger.info({ runnerId: runner.id }, 'runner deleted');
}

/** Fails `build`, which needs `missing` (runner-features.ts), as GitLab does when a runner lacking them asks for a job. */
export function dropUnsupported(ctx: ServerContext, build: BuildRecord, missing: readonly string[]): void {
  finishBuild(ctx, build, 'failed', `the runner does not support ${missing.join(', ')}`, { failureReason: 'runner_unsupported' });
}

/**
 * `workflow: auto_cancel: on_job_failure: all`: once a job fails in a way that fails the pipeline
 * (not allowed to fail, no retry left), every other unfinished job of its pipeline is canceled.
 */
export function cancelOnJobFailure(ctx: ServerContext, failed: BuildRecord): void {
  const pipeline = ctx.store.pipelines.get(failed.pipelineId);
  if (pipeline?.autoCancel?.onJobFailure !== 'all' || failureAllowed(failed)) return;
  const others = currentBuilds(ctx.store, pipeline).filter((build) => build.id !== failed.id && UNFINISHED_STATUSES.has(build.status));
  if (others.length === 0) return;
  ctx.logger.info({ pipelineId: pipeline.id, buildId: failed.id }, 'pipeline canceled: a job failed (workflow: auto_cancel: on_job_failure: all)');
  cancelBuilds(ctx, others, { force: true });
}
