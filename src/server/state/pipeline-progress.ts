/**
 * Pipeline progression. A job without `needs` follows GitLab 8.x's stage rule: it leaves `created`
 * only when every earlier stage is complete, according to `when` and the earlier stages' composite
 * status. A job with `needs` (GitLab 12.2+ DAG) ignores stages and waits only for the jobs it needs
 * (`needs: []` starts at once). Then: `on_success` needs success, `on_failure` needs failure,
 * `always` runs after either, `manual` becomes `manual` (waiting for a person), `delayed` becomes
 * `scheduled` (queued `start_in` later by `state/delayed.ts`), a job of a `resource_group`
 * `waiting_for_resource` (`state/resource-groups.ts`). A job whose condition does not hold is
 * `skipped`; so is everything after a cancellation. Retried builds are history: only the latest build
 * of each job name counts.
 */
import type { JobSpec, JobWhen } from '../../pipeline/spec.js';
import type { BuildRecord, PipelineRecord, Store } from './store.js';
import { compositeStatus, isComplete, type CompositeStatus } from './composite-status.js';
import { queuedStatus } from './resource-groups.js';

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

/** The builds that count: the latest of each job (a retry replaces the build it retried). */
export function currentBuilds(store: Store, pipeline: PipelineRecord): BuildRecord[] {
  return store.pipelineBuilds(pipeline).filter((build) => build.retried !== true);
}

/** The current builds of the jobs `job` needs (a need whose job is absent from the pipeline names none). */
export function neededBuilds(job: JobSpec, builds: readonly BuildRecord[]): BuildRecord[] {
  const names = new Set((job.needs ?? []).map((need) => need.job));
  return builds.filter((build) => names.has(build.job.name));
}

/**
 * Advances `pipeline` as far as it can. Returns true when at least one build became pending (the
 * caller then wakes the scheduler).
 */
export function processPipeline(store: Store, pipeline: PipelineRecord, now = Date.now()): boolean {
  const builds = currentBuilds(store, pipeline);
  let queued = false;
  // A DAG job can unblock a stage job and the reverse; repeat until nothing moves (bounded by the
  // number of builds, each of which leaves `created` at most once per pass).
  for (let changed = true; changed; ) {
    changed = false;
    for (const build of builds) {
      if (build.status !== 'created') continue;
      const prior = build.job.needs === undefined ? stagePrior(build, builds) : neededBuilds(build.job, builds);
      if (!isComplete(prior, build.job.needs !== undefined)) continue;
      queued = enqueueOrSkip(build, compositeStatus(prior), now) || queued;
      changed = true;
    }
  }
  return queued;
}

/** What a stage-ordered job waits for: every build of the earlier stages. */
function stagePrior(build: BuildRecord, builds: readonly BuildRecord[]): BuildRecord[] {
  return builds.filter((other) => other.stageIndex < build.stageIndex);
}

function enqueueOrSkip(build: BuildRecord, prior: CompositeStatus, now: number): boolean {
  if (!runsAfter(build.job.when, prior)) {
    build.status = 'skipped';
    build.finishedAt = new Date(now);
    return false;
  }
  if (build.job.when === 'manual') {
    build.status = 'manual';
    return false;
  }
  if (build.job.when === 'delayed') {
    build.status = 'scheduled';
    build.scheduledAt = new Date(now + (build.job.startIn ?? 0) * 1000);
    return false;
  }
  // A job of a resource group waits for its resource first (`resource-groups.ts` gives it out).
  build.status = queuedStatus(build);
  build.lastActivityAt = now;
  return build.status === 'pending';
}

/** The pipeline's own status: the composite of its current builds. */
export function pipelineStatus(store: Store, pipeline: PipelineRecord): CompositeStatus {
  return compositeStatus(currentBuilds(store, pipeline));
}
