/**
 * GitLab's auto-cancel of redundant pipelines (`interruptible`, `workflow: auto_cancel:
 * on_new_commit`): when a pipeline is created for a ref, older unfinished pipelines of the same
 * project and ref, for another commit, are canceled, with their child pipelines. `conservative`
 * (the default): all their unfinished jobs, unless one of their jobs that is not `interruptible:
 * true` has already started, in which case that older
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
import { cancelBuilds, UNFINISHED_STATUSES as UNFINISHED } from './transitions.js';

/**
 * The pipelines `pipeline` may make redundant, as GitLab picks them: older pipelines of its project and
 * ref for another commit than its own (a second pipeline of the same commit cancels nothing), not
 * themselves child pipelines, and the child pipelines below those, each judged by its own setting.
 */
function redundantCandidates(ctx: ServerContext, pipeline: PipelineRecord): PipelineRecord[] {
  const all = [...ctx.store.pipelines.values()];
  const candidates = all.filter((older) => older.id < pipeline.id && !older.parent && older.projectId === pipeline.projectId && older.ref === pipeline.ref && older.sha !== pipeline.sha);
  for (let i = 0; i < candidates.length; i += 1) {
    const parent = candidates[i];
    candidates.push(...all.filter((child) => child.parent?.pipelineId === parent?.id));
  }
  return candidates;
}

/** Cancels what `pipeline` makes redundant; returns the ids of the pipelines canceled. */
export function cancelRedundantPipelines(ctx: ServerContext, pipeline: PipelineRecord): number[] {
  const canceled: number[] = [];
  for (const older of redundantCandidates(ctx, pipeline)) {
    const builds = currentBuilds(ctx.store, older);
    if (!builds.some((build) => UNFINISHED.has(build.status))) continue;
    if (!builds.some((build) => build.job.interruptible === true)) continue;
    const mode = older.autoCancel?.onNewCommit ?? 'conservative';
    if (mode === 'none') continue;
    const started = builds.filter((build) => build.startedAt !== null);
    if (mode === 'conservative' && started.some((build) => build.job.interruptible !== true)) continue;
    cancelBuilds(ctx, builds.filter((build) => UNFINISHED.has(build.status) && (mode === 'conservative' || build.job.interruptible === true)));
    canceled.push(older.id);
    ctx.logger.info({ pipelineId: older.id, by: pipeline.id }, 'pipeline auto-canceled: a newer pipeline runs on the same ref');
  }
  return canceled;
}

