/**
 * The stages the runner process runs itself, each in its log section when it has something to do
 * (GitLab Runner skips a stage with nothing to do, section and all): restore_cache and
 * download_artifacts before the steps; archive_cache / archive_cache_on_failure and
 * upload_artifacts_on_success / upload_artifacts_on_failure after them; cleanup_file_variables last.
 */
import { rm } from 'node:fs/promises';
import { fileVariablePaths } from '../../executors/common/file-variables.js';
import { JobOverLimitError, type Executor, type ExportedVariable } from '../../executors/types.js';
import type { BuildPayload, CacheOptions } from '../../protocol/types.js';
import type { JobFailure } from '../../trace/index.js';
import { hasCode } from '../../util/errors.js';
import { expandString } from '../../util/expand.js';
import { hasArtifactsToDownload, type CacheRequest, type StageContext } from './artifact-stages.js';
import { failureOf, StageFailed } from './failure.js';
import { JobStop, type JobSignal } from './job-signal.js';
import type { LogSections } from './log-sections.js';
import { warning } from './messages.js';
import type { JobServices } from './services.js';
import type { JobEnv, StageRun } from './stage-run.js';

/** restore_cache, then download_artifacts (GitLab Runner's order: an artifact's file wins over the cache's). */
export async function restoreAndDownload(build: BuildPayload, services: JobServices, ctx: StageContext, job: JobSignal, env: JobEnv, sections: LogSections): Promise<void> {
  const caches = cachesOf(build);
  if (caches.length > 0) {
    services.onStage?.(build, 'restore_cache');
    await sections.around('restore_cache', async () => {
      for (const cache of caches) {
        await services.stages.restoreCache(ctx, { ...cacheRequest(cache, services, env.host), attempts: env.controls.restoreCacheAttempts }).catch((error: unknown) => {
          job.check();
          if (hasCode(error, 'CACHE_POLICY_UNKNOWN')) throw new StageFailed((error as Error).message);
          ctx.log(warning(`WARNING: restoring the cache failed: ${(error as Error).message}`));
        });
        job.check();
      }
    });
  }
  if (!hasArtifactsToDownload(build)) return;
  services.onStage?.(build, 'download_artifacts');
  await sections.around('download_artifacts', () =>
    services.stages.downloadArtifacts(ctx, { attempts: env.controls.artifactDownloadAttempts }).catch((error: unknown) => {
      job.check();
      throw new StageFailed(`downloading artifacts failed: ${(error as Error).message}`);
    }),
  );
  job.check();
}

export interface SoFar {
  ok: boolean;
  reason?: string;
  buildRan: boolean;
  env: JobEnv | undefined;
  executor: Executor;
}

/** archive_cache (per cache:when, success by default), then upload_artifacts (per artifacts:when). */
export async function archiveAndUpload(
  build: BuildPayload,
  services: JobServices,
  ctx: StageContext,
  job: JobSignal,
  sofar: SoFar,
  sections: LogSections,
): Promise<{ ok: boolean; reason?: string; failure?: JobFailure }> {
  let { ok, reason } = sofar;
  let failure: JobFailure | undefined;
  const caches = cachesOf(build).filter((cache) => {
    const when = cache.when ?? 'on_success';
    return when === 'always' || (when === 'on_success') === ok;
  });
  const artifacts = uploadsFor(build, ok);
  // Where the build stages ran elsewhere (kubernetes), their files come back first, once.
  if (sofar.executor.collect && sofar.buildRan && (caches.some((cache) => cache.policy !== 'pull') || artifacts) && !job.signal.aborted) {
    try {
      await sofar.executor.collect(job.signal, (line) => ctx.log(warning(line)));
    } catch (error) {
      const message = `bringing the build's files back from the ${sofar.executor.name} executor failed: ${(error as Error).message}`;
      // A job that failed already keeps its reason; this one is worth a line.
      if (!ok) ctx.log(warning(`WARNING: ${message}`));
      const ownFault = error instanceof JobOverLimitError;
      return { ok: false, reason: job.signal.aborted ? job.reason() : (reason ?? message), failure: ok ? { reason: ownFault ? 'script_failure' : 'runner_system_failure' } : stopFailure(job) };
    }
  }
  const env = sofar.env;
  if (caches.length > 0 && env && !job.signal.aborted) {
    const stage = ok ? 'archive_cache' : 'archive_cache_on_failure';
    services.onStage?.(build, stage);
    await sections.around(stage, async () => {
      for (const cache of caches) {
        if (job.signal.aborted) break;
        await services.stages.archiveCache(ctx, cacheRequest(cache, services, env.host)).catch((error: unknown) => {
          if (hasCode(error, 'CACHE_POLICY_UNKNOWN') && ok) {
            // As GitLab Runner: a policy that is none of GitLab's fails the job.
            ok = false;
            reason = (error as Error).message;
            failure = { reason: 'script_failure' };
          }
          ctx.log(warning(`WARNING: saving the cache failed: ${(error as Error).message}`));
        });
      }
    });
  }
  // A failure to upload fails an otherwise successful job.
  if (artifacts && sofar.buildRan && !job.signal.aborted) {
    const stage = ok ? 'upload_artifacts_on_success' : 'upload_artifacts_on_failure';
    services.onStage?.(build, stage);
    try {
      const variables = env?.host ?? [];
      const expand = (text: string): string => expandString(text, (name) => variables.findLast((v) => v.key === name)?.value ?? '');
      const level = env?.controls.artifactCompressionLevel;
      const limits = services.runner.artifact;
      const timeouts = { uploadMs: limits.upload_timeout * 1000, responseHeaderMs: limits.response_header_timeout * 1000 };
      const succeeded = ok;
      await sections.around(stage, () => services.stages.uploadArtifacts(ctx, { format: services.runner.artifacts_format, jobSucceeded: succeeded, expand, timeouts, ...(level !== undefined ? { compressionLevel: level } : {}) }));
    } catch (error) {
      if (ok) {
        ok = false;
        reason = job.signal.aborted ? job.reason() : `uploading artifacts failed: ${(error as Error).message}`;
        failure = job.signal.aborted ? stopFailure(job) : { reason: 'script_failure' };
      } else ctx.log(warning(`WARNING: uploading artifacts failed: ${(error as Error).message}`));
    }
  }
  if (ok && job.signal.aborted) {
    ok = false;
    reason = job.reason();
    failure = stopFailure(job);
  }
  return { ok, ...(reason ? { reason } : {}), ...(failure ? { failure } : {}) };
}

/**
 * cleanup_file_variables: the job's file variables go from the runner's state dir (the rest of it
 * goes once the final update is out).
 */
export async function cleanupFileVariables(build: BuildPayload, services: JobServices, run: StageRun, env: JobEnv | undefined, sections: LogSections): Promise<void> {
  services.onStage?.(build, 'cleanup_file_variables');
  await sections.around('cleanup_file_variables', async () => {
    const files = fileVariablePaths(env?.host ?? []);
    await Promise.all(files.map((path) => rm(path, { force: true }).catch((error: unknown) => run.logger.warn({ err: error, path }, 'cannot remove a file variable'))));
  });
}

/** Whether any artifacts entry uploads for this outcome. */
function uploadsFor(build: BuildPayload, ok: boolean): boolean {
  const artifacts = build.options.artifacts;
  if (artifacts === undefined) return false;
  const entries = Array.isArray(artifacts) ? artifacts : [artifacts];
  return entries.some((entry) => {
    const when = entry.when ?? 'on_success';
    return when === 'always' || (when === 'on_success') === ok;
  });
}

/** The job's caches: one map (§5.3) or a list of them. */
function cachesOf(build: BuildPayload): CacheOptions[] {
  const cache = build.options.cache;
  return cache === undefined ? [] : Array.isArray(cache) ? cache : [cache];
}

/** One cache of the job as the cache stages take it: the runner's cache dir and store, the job's variables. */
function cacheRequest(cache: CacheOptions, services: JobServices, variables: ExportedVariable[]): CacheRequest {
  const { runner } = services;
  return {
    cacheDir: runner.cache_dir,
    runnerName: runner.name,
    config: runner.cache,
    runnerToken: runner.token,
    ca: services.client.tls.ca,
    spec: cache,
    variable: (name) => variables.findLast((v) => v.key === name)?.value,
  };
}

/** Why the job stopped, as v4's final update says it. */
function stopFailure(job: JobSignal): JobFailure {
  return failureOf(new JobStop(job.reason()), job.timedOut(), job.canceled(), job.interrupted());
}
