/**
 * Stage progression (GitLab 8.x `ProcessPipelineService`): the jobs of a stage leave `created` only
 * when every earlier stage is complete, and then according to `when` and the earlier stages'
 * composite status: `on_success` needs success, `on_failure` needs failure, `always` runs after
 * either, `manual` becomes `manual` (waiting for a person) after success. A job whose condition does
 * not hold is `skipped`; so is everything after a cancellation.
 */
import type { JobWhen } from './spec.js';
import type { BuildRecord, PipelineRecord, Store } from '../state/store.js';
import { compositeStatus, isComplete, type CompositeStatus } from './status.js';

function runsAfter(when: JobWhen, prior: CompositeStatus): boolean {
  switch (when) {
    case 'on_success':
    case 'manual':
    case 'delayed':
      return prior === 'success' || prior === 'skipped';
    case 'on_failure':
      return prior === 'failed';
    case 'always':
      return prior === 'success' || prior === 'failed' || prior === 'skipped';
  }
}

/**
 * Advances `pipeline` as far as it can. Returns true when at least one build became pending (the
 * caller then wakes the scheduler).
 */
export function processPipeline(store: Store, pipeline: PipelineRecord): boolean {
  const builds = store.pipelineBuilds(pipeline);
  const stageIndexes = [...new Set(builds.map((build) => build.stageIndex))].sort((a, b) => a - b);
  let queued = false;
  for (const index of stageIndexes) {
    const prior = builds.filter((build) => build.stageIndex < index);
    if (!isComplete(prior)) break;
    const status = compositeStatus(prior);
    for (const build of builds) {
      if (build.stageIndex !== index || build.status !== 'created') continue;
      queued = enqueueOrSkip(build, status) || queued;
    }
  }
  return queued;
}

function enqueueOrSkip(build: BuildRecord, prior: CompositeStatus): boolean {
  if (!runsAfter(build.job.when, prior)) {
    build.status = 'skipped';
    build.finishedAt = new Date();
    return false;
  }
  if (build.job.when === 'manual') {
    build.status = 'manual';
    return false;
  }
  build.status = 'pending';
  build.lastActivityAt = Date.now();
  return true;
}

/** The pipeline's own status: the composite of all its builds. */
export function pipelineStatus(store: Store, pipeline: PipelineRecord): CompositeStatus {
  return compositeStatus(store.pipelineBuilds(pipeline));
}
