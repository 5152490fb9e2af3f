/**
 * Which of a runner's announced `info.features` a job needs (docs/protocol-v4.md §3). GitLab drops a job
 * as `runner_unsupported` when the runner that asks lacks one; this server leaves the job pending for
 * a runner that has them (and says so when nobody does, `stuck.ts`). Only runners that last asked
 * through API v4 are held to it: the v1 payload carries what these features stand for differently
 * (a dotenv report inside the archive), or not at all.
 */
import type { BuildRecord, RunnerRecord } from './store.js';

/** The features the v4 payload of `build` relies on the runner having. */
export function requiredFeatures(build: BuildRecord): string[] {
  const job = build.job;
  const needs: string[] = [];
  if ((job.artifacts?.reports?.dotenv ?? []).length > 0) needs.push('upload_multiple_artifacts');
  if ((job.artifacts?.exclude ?? []).length > 0) needs.push('artifacts_exclude');
  if ((job.allowFailureExitCodes ?? []).length > 0) needs.push('return_exit_code');
  if ((job.cache ?? []).some((cache) => (cache.fallbackKeys ?? []).length > 0)) needs.push('fallback_cache_keys');
  return needs;
}

/** The features `build` needs that `runner` did not announce (none for a v1 runner). */
export function missingFeatures(runner: RunnerRecord, build: BuildRecord): string[] {
  if (runner.api !== 'v4') return [];
  const features = runner.features ?? {};
  return requiredFeatures(build).filter((feature) => features[feature] !== true);
}
