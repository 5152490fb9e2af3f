/**
 * The artifact and cache stages, as the job runner calls them (TEAM.md interface of
 * `src/artifacts/index.ts`). Kept behind this small port so the job runner is testable with fakes.
 */
import type { RunnerApiClient } from '../../client/runner-api.js';
import type { BuildPayload } from '../../protocol/types.js';

export interface StageContext {
  build: BuildPayload;
  client: RunnerApiClient;
  projectDir: string;
  stateDir: string;
  log(line: string): void;
  signal: AbortSignal;
}

export interface CacheRequest {
  cacheDir: string;
  runnerName: string;
  key: string;
}

export interface ArtifactStages {
  downloadArtifacts(ctx: StageContext, opts: { attempts: number }): Promise<void>;
  uploadArtifacts(ctx: StageContext, opts: { format: 'tar.gz' | 'zip'; jobSucceeded: boolean }): Promise<void>;
  restoreCache(ctx: StageContext, opts: CacheRequest): Promise<void>;
  archiveCache(ctx: StageContext, opts: CacheRequest): Promise<void>;
}

/** Stages that only say artifacts are unavailable (used when the artifacts module cannot load). */
export const unavailableArtifactStages: ArtifactStages = {
  async downloadArtifacts(ctx) {
    if (ctx.build.depends_on_builds.some((d) => d.artifacts_file)) ctx.log('WARNING: artifact downloads are not available in this build of ci-runner');
  },
  async uploadArtifacts(ctx) {
    if (ctx.build.options.artifacts) ctx.log('WARNING: artifact uploads are not available in this build of ci-runner');
  },
  async restoreCache() {},
  async archiveCache() {},
};

let loaded: Promise<ArtifactStages> | undefined;

/** The real stages from `src/artifacts/`, loaded once. */
export function loadArtifactStages(): Promise<ArtifactStages> {
  // A computed specifier: the artifacts module is written in parallel and may not exist yet.
  const specifier = '../../artifacts/index.js';
  loaded ??= (import(specifier) as Promise<unknown>)
    .then((mod) => {
      const m = mod as Partial<ArtifactStages>;
      return typeof m.uploadArtifacts === 'function' && typeof m.downloadArtifacts === 'function' && typeof m.restoreCache === 'function' && typeof m.archiveCache === 'function'
        ? (m as ArtifactStages)
        : unavailableArtifactStages;
    })
    .catch(() => unavailableArtifactStages);
  return loaded;
}
