/**
 * Playing a manual build and retrying a finished one, as a person does from a CI server's page.
 *
 * Stand-in: the `sched` part owns the real version of this module; this one is just enough for the
 * web page's buttons to do the right thing (and is meant to be replaced at merge). A retry takes the
 * old build out of its pipeline's list so the pipeline's status follows the new build; after a
 * restart with a data dir the old one comes back into the list (the journal has no "retried" mark).
 */
import type { ServerContext } from '../context.js';
import type { BuildRecord } from './store.js';
import { advancePipeline } from './transitions.js';

const FINISHED = new Set(['success', 'failed', 'canceled']);

/** Queues a `manual` build. Returns false (and changes nothing) for a build in any other state. */
export function playBuild(ctx: ServerContext, build: BuildRecord): boolean {
  if (build.status !== 'manual') return false;
  ctx.store.changeBuild(build, (b) => {
    b.status = 'pending';
    b.lastActivityAt = Date.now();
  });
  ctx.logger.info({ buildId: build.id }, 'manual build played');
  ctx.scheduler.buildsQueued();
  return true;
}

/**
 * Queues a copy of a finished build (success, failed or canceled) as a new build in the same
 * pipeline, and puts the builds of later stages that were skipped because of it back to `created`,
 * so the pipeline goes on once the copy passes (GitLab's "retry"). Returns the new build, or
 * undefined when `build` has not finished.
 */
export function retryBuild(ctx: ServerContext, build: BuildRecord): BuildRecord | undefined {
  const pipeline = ctx.store.pipelines.get(build.pipelineId);
  if (!pipeline || !FINISHED.has(build.status)) return undefined;
  const retry = ctx.store.addBuild(pipeline, build.job, build.stageIndex);
  pipeline.buildIds.splice(pipeline.buildIds.indexOf(build.id), 1);
  ctx.store.sink?.pipeline(pipeline);
  for (const later of ctx.store.pipelineBuilds(pipeline)) {
    if (later.stageIndex > build.stageIndex && later.status === 'skipped') {
      ctx.store.changeBuild(later, (b) => {
        b.status = 'created';
        b.finishedAt = null;
      });
    }
  }
  ctx.logger.info({ buildId: build.id, retryId: retry.id }, 'build retried');
  advancePipeline(ctx, pipeline.id);
  return retry;
}
