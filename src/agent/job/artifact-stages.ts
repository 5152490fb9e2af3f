/**
 * The artifact and cache stages, as the job runner calls them (the functions of
 * `src/artifacts/index.ts`). Kept behind this small port so the job runner is testable with fakes.
 */
import type { ArtifactsContext } from '../../artifacts/index.js';
import type { BuildPayload, CacheOptions } from '../../protocol/types.js';

export type StageContext = ArtifactsContext;

export interface CacheRequest {
  cacheDir: string;
  runnerName: string;
  key: string;
  fallbackKeys?: readonly string[];
  /** The cache entry (a job may have several). */
  spec?: CacheOptions;
}

export interface ArtifactStages {
  downloadArtifacts(ctx: StageContext, opts: { attempts: number }): Promise<void>;
  uploadArtifacts(ctx: StageContext, opts: { format: 'tar.gz' | 'zip'; jobSucceeded: boolean; expand?: (text: string) => string; compressionLevel?: number }): Promise<void>;
  restoreCache(ctx: StageContext, opts: CacheRequest): Promise<void>;
  archiveCache(ctx: StageContext, opts: CacheRequest): Promise<void>;
}

// Loaded on first use: archive libraries cost an idle daemon ~15 MB it does not need until a job
// actually has artifacts or a cache.
const artifacts = (): Promise<typeof import('../../artifacts/index.js')> => import('../../artifacts/index.js');

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
    await (await artifacts()).restoreCache(ctx, opts);
  },
  async archiveCache(ctx, opts) {
    await (await artifacts()).archiveCache(ctx, opts);
  },
};
