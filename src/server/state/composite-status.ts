/**
 * Composite statuses as GitLab computes them for a set of builds (earlier stages, the jobs a job
 * needs, or a whole pipeline). A failed build with `allow_failure` counts as a success; a `manual` job
 * that was never played counts as skipped when it may fail (GitLab's default for manual jobs), and as
 * `manual` — blocking what comes after it — when it says `allow_failure: false`. A job
 * `waiting_for_resource` makes the set `waiting_for_resource` while nothing else runs. A `scheduled`
 * (delayed) job has not run yet and holds up what comes after it.
 */
import type { BuildStatus } from '../../protocol/types.js';
import type { BuildRecord } from './store.js';

export type CompositeStatus = 'created' | 'waiting_for_resource' | 'pending' | 'running' | 'success' | 'failed' | 'canceled' | 'skipped' | 'manual' | 'scheduled';

const ACTIVE = new Set<BuildStatus>(['created', 'waiting_for_resource', 'pending', 'running', 'scheduled']);

/**
 * Whether a failure of `build` lets what follows go on: `allow_failure: true`, or one of its
 * `allow_failure: exit_codes` is the status its script exited with.
 */
export function failureAllowed(build: Pick<BuildRecord, 'job' | 'exitCode'>): boolean {
  if (build.job.allowFailure) return true;
  const codes = build.job.allowFailureExitCodes;
  return codes !== undefined && build.exitCode !== undefined && codes.includes(build.exitCode);
}

function effective(build: BuildRecord): BuildStatus {
  if (build.status === 'failed' && failureAllowed(build)) return 'success';
  if (build.status === 'manual') return build.job.allowFailure ? 'skipped' : 'manual';
  return build.status;
}

/** The status of a set of builds; an empty set is `success` (nothing to wait for). */
export function compositeStatus(builds: readonly BuildRecord[]): CompositeStatus {
  const statuses = builds.map(effective);
  if (statuses.length === 0) return 'success';
  if (statuses.every((s) => s === 'skipped')) return 'skipped';
  if (statuses.every((s) => s === 'success' || s === 'skipped')) return 'success';
  if (statuses.every((s) => s === 'created')) return 'created';
  if (statuses.every((s) => s === 'pending' || s === 'created')) return 'pending';
  if (statuses.some((s) => s === 'pending' || s === 'running')) return 'running';
  if (statuses.some((s) => s === 'waiting_for_resource')) return 'waiting_for_resource';
  if (statuses.some((s) => s === 'scheduled')) return 'scheduled';
  // Nothing can move on its own: what is still `created` waits for a manual job to be played (one
  // that blocks, or one it needs), which GitLab shows as a blocked (`manual`) pipeline.
  if (statuses.some((s) => s === 'manual' || s === 'created')) return 'manual';
  if (statuses.some((s) => s === 'failed')) return 'failed';
  if (statuses.some((s) => s === 'canceled')) return 'canceled';
  return 'success';
}

/**
 * True when no build in the set can still change state on its own, and none blocks: an unplayed
 * manual job with `allow_failure: false` keeps what comes after it waiting, as GitLab's "blocked".
 * With `strictManual` (a job's `needs`), any unplayed manual job blocks: GitLab makes a job that
 * needs a manual job wait until it is played.
 */
export function isComplete(builds: readonly BuildRecord[], strictManual = false): boolean {
  return builds.every((build) => {
    if (ACTIVE.has(build.status)) return false;
    if (build.status === 'manual') return !strictManual && build.job.allowFailure;
    return true;
  });
}

export function isFinished(status: BuildStatus): boolean {
  return status === 'success' || status === 'failed' || status === 'canceled' || status === 'skipped';
}
