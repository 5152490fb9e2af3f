/**
 * GitLab's auto-cancel of redundant pipelines (`interruptible`, `workflow: auto_cancel:
 * on_new_commit`): when a pipeline is created for a ref, older unfinished pipelines of the same
 * project and ref are canceled. `conservative` (the default): all their unfinished jobs, unless one
 * of their jobs that is not `interruptible: true` has already started, in which case that older
 * pipeline runs on untouched (a deployment half done is not stopped). `interruptible`: only their
 * `interruptible: true` jobs, whatever else runs. `none`: nothing. The older pipeline's own setting
 * decides, as on GitLab.
 *
 * `on_job_failure: all` is in `transitions.ts` (`cancelOnJobFailure`), beside the end of a build.
 *
 * One difference from GitLab, whose project setting is on by default: only a pipeline with at least
 * one `interruptible: true` job is ever canceled. A pipeline that never mentions `interruptible`
 * (every pipeline written for GitLab 8.x, which had no auto-cancel) runs to its end as it always did.
 */
import type { ServerContext } from '../context.js';
import { currentBuilds } from './pipeline-progress.js';
import type { PipelineRecord } from './store.js';
import { cancelBuild } from './transitions.js';

const UNFINISHED = new Set(['created', 'pending', 'running', 'manual', 'scheduled']);

/** Cancels what `pipeline` makes redundant; returns the ids of the pipelines canceled. */
export function cancelRedundantPipelines(ctx: ServerContext, pipeline: PipelineRecord): number[] {
  const canceled: number[] = [];
  for (const older of ctx.store.pipelines.values()) {
    if (older.id >= pipeline.id || older.projectId !== pipeline.projectId || older.ref !== pipeline.ref) continue;
    const builds = currentBuilds(ctx.store, older);
    if (!builds.some((build) => UNFINISHED.has(build.status))) continue;
    if (!builds.some((build) => build.job.interruptible === true)) continue;
    const mode = older.autoCancel?.onNewCommit ?? 'conservative';
    if (mode === 'none') continue;
    const started = builds.filter((build) => build.startedAt !== null);
    if (mode === 'conservative' && started.some((build) => build.job.interruptible !== true)) continue;
    for (const build of builds) {
      if (UNFINISHED.has(build.status) && (mode === 'conservative' || build.job.interruptible === true)) cancelBuild(ctx, build);
    }
    canceled.push(older.id);
    ctx.logger.info({ pipelineId: older.id, by: pipeline.id }, 'pipeline auto-canceled: a newer pipeline runs on the same ref');
  }
  return canceled;
}

