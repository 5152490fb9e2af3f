/**
 * What the cache stages of one job work with: the job's context (artifacts/context.ts), where the
 * runner keeps caches, its distributed store if any, and the job's variables. The agent builds one
 * per cache entry of the job (agent/job/artifact-stages.ts).
 */
import type { ArtifactsContext } from '../artifacts/context.js';
import type { CacheOptions } from '../protocol/types.js';
import type { CacheConfig } from './config.js';
import type { VariableLookup } from './plan.js';

export interface CacheStageOptions {
  /** The runner's `cache_dir`: the local copies. */
  cacheDir: string;
  /** `[runners.cache]`; a distributed cache when its `Type` is set. */
  config?: CacheConfig | undefined;
  /** The runner entry's name (the runner's metrics count cache bytes under it). */
  runnerName: string;
  /** The runner's token, for its short token in the object name of an unshared cache. */
  runnerToken: string;
  /** The runner's private CA (PEM), trusted for the store beside the system's. */
  ca?: string | undefined;
  /** The cache entry (a job may have several). */
  spec: CacheOptions;
  /** The job's variables (expanded; the last definition of a name wins). */
  variable: VariableLookup;
  /** RESTORE_CACHE_ATTEMPTS (1–10, default 1): tries of a restore the store failed (restore.ts). */
  attempts?: number;
}

/** What a stage moved, for the runner's metrics: bytes of archive restored or saved (locally or through the store). */
export interface CacheTraffic {
  bytes: number;
}

export type CacheContext = ArtifactsContext;

/** Whether the entry has anything to cache (GitLab Runner skips one without paths and untracked). */
export function hasCachePaths(spec: CacheOptions): boolean {
  return (spec.paths ?? []).length > 0 || spec.untracked === true;
}

/** GitLab Runner's job timeout when the coordinator sends none (common.DefaultTimeout). */
const DEFAULT_JOB_TIMEOUT_SEC = 7200;

/** Seconds a signed URL lives: the job's timeout, as GitLab Runner signs them. */
export function urlLifetimeSec(ctx: CacheContext): number {
  return ctx.build.timeout && ctx.build.timeout > 0 ? ctx.build.timeout : DEFAULT_JOB_TIMEOUT_SEC;
}
