/**
 * The artifact and cache stages, as the job runner calls them (the functions of
 * `src/artifacts/index.ts`). Kept behind this small port so the job runner is testable with fakes.
 */
import type { ArtifactsContext } from '../../artifacts/index.js';
import type { CacheStageOptions, CacheTraffic } from '../../cache/index.js';
import type { BuildPayload } from '../../protocol/types.js';

export type StageContext = ArtifactsContext;

/** One of a job's caches, as the cache stages take it (src/cache/job.ts). */
export type CacheRequest = CacheStageOptions;

export interface ArtifactStages {
  downloadArtifacts(ctx: StageContext, opts: { attempts: number }): Promise<void>;
  uploadArtifacts(ctx: StageContext, opts: { format: 'tar.gz' | 'zip'; jobSucceeded: boolean; expand?: (text: string) => string; compressionLevel?: number }): Promise<void>;
  /** Resolves to the archive bytes restored, when a cache was. */
  restoreCache(ctx: StageContext, opts: CacheRequest): Promise<CacheTraffic | undefined>;
  /** Resolves to the archive bytes written, when a new archive was. */
  archiveCache(ctx: StageContext, opts: CacheRequest): Promise<CacheTraffic | undefined>;
}

// Loaded on first use: archive libraries cost an idle daemon ~15 MB it does not need until a job
// actually has artifacts or a cache. A store's SDK is loaded by the cache only when a runner names one.
const artifacts = (): Promise<typeof import('../../artifacts/index.js')> => import('../../artifacts/index.js');
const cache = (): Promise<typeof import('../../cache/index.js')> => import('../../cache/index.js');

/** True when a job depends on a job with artifacts (download_artifacts has something to do). */
export function hasArtifactsToDownload(build: BuildPayload): boolean {
  return build.depends_on_builds.some((d) => d.artifacts_file);
}

/** The real stages from `src/artifacts/`. */
export const artifactStages: ArtifactStages = {
  async downloadArtifacts(ctx, opts) {
    if (!hasArtifactsToDownload(ctx.build)) return;
    await (await artifacts()).downloadArtifacts(ctx, opts);
  },
  async uploadArtifacts(ctx, opts) {
    await (await artifacts()).uploadArtifacts(ctx, opts);
  },
  async restoreCache(ctx, opts) {
    return (await cache()).restoreCache(ctx, opts);
  },
  async archiveCache(ctx, opts) {
    return (await cache()).archiveCache(ctx, opts);
  },
};
