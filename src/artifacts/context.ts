import type { RunnerApi } from '../client/api.js';
import type { BuildPayload } from '../protocol/types.js';
import type { ExtractBudget } from './budget.js';

/** What every artifacts/cache stage gets from the job (agent/job/artifact-stages.ts passes it). */
export interface ArtifactsContext {
  build: BuildPayload;
  client: RunnerApi;
  /** The checkout; selection and extraction never go outside it. */
  projectDir: string;
  /** The job's state dir: archives and downloads are written here, never held in memory. */
  stateDir: string;
  /** Runner lines into the job trace (one line, no trailing newline). */
  log(line: string): void;
  signal: AbortSignal;
  /** The job's `artifacts_extract_limit`, shared by its downloads and its cache restore; none when absent. */
  extractBudget?: ExtractBudget;
}
