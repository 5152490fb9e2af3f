import { backoffDelay, sleep } from '../../client/backoff.js';
import type { RunnerApiClient } from '../../client/runner-api.js';
import { VERSION } from '../../version.js';
import type { RunnerConfig } from '../config/schema.js';
import { errorLine, header } from './messages.js';

/**
 * Reports a build `failed` with a short explanatory trace in one E5 (used when the build cannot be
 * run at all: an invalid payload or a failed setup), retrying transient failures a few times.
 */
export async function reportBuildFailed(client: RunnerApiClient, runner: Pick<RunnerConfig, 'name' | 'token'>, buildId: number, message: string, signal: AbortSignal): Promise<boolean> {
  const trace = `${header(VERSION, runner.name, runner.token)}${errorLine(`ERROR: Job failed: ${message}`)}`;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    try {
      const result = await client.updateBuild(buildId, runner.token, { state: 'failed', trace }, signal);
      if (result.outcome !== 'retry') return true;
      // Abortable, so a daemon shutting down is not held up by this wait.
      await sleep(backoffDelay(attempt, { baseMs: 1000, maxMs: 5000 }), signal);
    } catch {
      return false;
    }
  }
  return false;
}
