/**
 * The artifact and cache stages, as the job runner calls them (TEAM.md interface of
 * `src/artifacts/index.ts`). Kept behind this small port so the job runner is testable with fakes.
 */
import type { RunnerApiClient } from '../../client/runner-api.js';
import type { BuildPayload } from '../../protocol/types.js';
import { archiveCache, downloadArtifacts, restoreCache, uploadArtifacts } from '../../artifacts/index.js';

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

/** The real stages from `src/artifacts/`. */
export const artifactStages: ArtifactStages = { downloadArtifacts, uploadArtifacts, restoreCache, archiveCache };
