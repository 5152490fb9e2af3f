/**
 * Composite statuses as GitLab 8.x computed them for a stage range or a whole pipeline. A failed build
 * with `allow_failure` counts as a success; `manual` jobs that were never played count as skipped.
 */
import type { BuildStatus } from '../../protocol/types.js';
import type { BuildRecord } from '../state/store.js';

export type CompositeStatus = 'created' | 'pending' | 'running' | 'success' | 'failed' | 'canceled' | 'skipped';

const ACTIVE = new Set<BuildStatus>(['created', 'pending', 'running']);

function effective(build: BuildRecord): BuildStatus {
  if (build.status === 'failed' && build.job.allowFailure) return 'success';
  if (build.status === 'manual') return 'skipped';
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
  if (statuses.some((s) => ACTIVE.has(s))) return 'running';
  if (statuses.some((s) => s === 'failed')) return 'failed';
  if (statuses.some((s) => s === 'canceled')) return 'canceled';
  return 'success';
}

/** True when no build in the set can still change state on its own. */
export function isComplete(builds: readonly BuildRecord[]): boolean {
  return builds.every((build) => !ACTIVE.has(build.status));
}

export function isFinished(status: BuildStatus): boolean {
  return status === 'success' || status === 'failed' || status === 'canceled' || status === 'skipped';
}
