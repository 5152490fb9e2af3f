/**
 * New attempts of a job in the same pipeline (GitLab's retry): the old build is kept as history
 * (`retried`), a new build of the same job takes its place, and jobs that were skipped because of
 * the old one go back to `created` so that the pipeline runs them if the new attempt allows it.
 */
import type { ServerContext } from '../context.js';
import { currentBuilds } from './pipeline-progress.js';
import type { BuildRecord } from './store.js';

/** Failures GitLab never retries, whatever `retry:` says (`Gitlab::Ci::Build::AutoRetry::RETRY_OVERRIDES`). */
const NEVER_RETRIED: ReadonlySet<string> = new Set(['ci_quota_exceeded', 'no_matching_runner', 'missing_dependency_failure', 'forward_deployment_failure', 'environment_creation_failure']);

/** Does the failed `build`'s `retry:` cover its failure, with attempts left? */
export function shouldRetry(build: BuildRecord): boolean {
  const retry = build.job.retry;
  if (!retry || (build.attempt ?? 0) >= retry.max) return false;
  const reason = build.failureReason ?? 'unknown_failure';
  if (NEVER_RETRIED.has(reason)) return false;
  // `retry:exit_codes`: GitLab retries on a listed exit status as well as on a listed reason.
  if (retry.exitCodes !== undefined && build.exitCode !== undefined && retry.exitCodes.includes(build.exitCode)) return true;
  return retry.when.some(
    (when) => when === 'always' || when === reason || (when === 'stuck_or_timeout_failure' && reason === 'job_execution_timeout'),
  );
}

/** Replaces `build` by a new `created` build of its job; returns the new build. */
export function newAttempt(ctx: ServerContext, build: BuildRecord): BuildRecord {
  const pipeline = ctx.store.pipelines.get(build.pipelineId);
  if (!pipeline) throw new Error(`build ${build.id} lost its pipeline`);
  ctx.store.changeBuild(build, (b) => {
    b.retried = true;
  });
  const next = ctx.store.addBuild(pipeline, build.job, build.stageIndex, (build.attempt ?? 0) + 1);
  for (const later of skippedAfter(currentBuilds(ctx.store, pipeline), build)) {
    ctx.store.changeBuild(later, (b) => {
      b.status = 'created';
      b.finishedAt = null;
    });
  }
  return next;
}

/** The skipped builds that come after `build`: later stages, or (transitively) needing it. */
function skippedAfter(builds: readonly BuildRecord[], build: BuildRecord): BuildRecord[] {
  const after = new Set<string>([build.job.name]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const other of builds) {
      if (after.has(other.job.name)) continue;
      const follows = other.job.needs === undefined
        ? other.stageIndex > build.stageIndex
        : other.job.needs.some((need) => after.has(need.job));
      if (follows) {
        after.add(other.job.name);
        grew = true;
      }
    }
  }
  return builds.filter((other) => other.status === 'skipped' && other.job.name !== build.job.name && after.has(other.job.name));
}
