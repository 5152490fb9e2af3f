/**
 * One job request of a runner entry and what its answer means for the entry: a build starts a job;
 * 403 marks the token refused; 5xx and network errors count as failures (backoff); a build that cannot
 * be read is reported failed to the server; 409 (another runner won) is healthy. A 403 or no answer at
 * all is also unhealthy in GitLab Runner's sense (health.ts): enough of them pause the entry.
 */
import type { RunnerApi } from '../client/api.js';
import type { Logger } from '../log/index.js';
import type { BuildPayload } from '../protocol/types.js';
import type { RunnerConfig } from './config/schema.js';
import { TRANSPORT_ERROR } from '../client/retryable.js';
import { markHealth, type Health } from './health.js';
import { reportBuildFailed } from './job/run-job.js';

/** The entry state a poll reads and updates. */
export interface PollEntry {
  config: RunnerConfig;
  client: RunnerApi;
  lastUpdate?: string;
  failures: number;
  lastStatus?: number;
  /** The coordinator's `Retry-After` on the last failed request, in ms. */
  retryAfterMs?: number | undefined;
  /** Unhealthy requests in a row and the last healthy answer (health.ts). */
  health: Health;
}

export interface PollSignals {
  /** Forced shutdown: abandon the request. */
  abortPolls: AbortSignal;
  /** Passed to the failure report of an unreadable build. */
  stopJobs: AbortSignal;
}

/** One E4; returns true when a job was started (its slot stays reserved until it ends). */
export async function pollOnce(entry: PollEntry, log: Logger, signals: PollSignals, startJob: (build: BuildPayload) => void): Promise<boolean> {
  const runner = entry.config;
  let result;
  try {
    result = await entry.client.requestBuild(runner.token, entry.lastUpdate, signals.abortPolls);
  } catch {
    return false; // forced shutdown abandoned the poll
  }
  if ('lastUpdate' in result && result.lastUpdate) entry.lastUpdate = result.lastUpdate;
  entry.lastStatus = result.status;
  entry.retryAfterMs = result.retryAfterMs;
  markHealth(entry.health, result.kind !== 'forbidden' && result.status !== TRANSPORT_ERROR, runner, log);
  switch (result.kind) {
    case 'build':
      entry.failures = 0;
      startJob(result.build);
      return true;
    case 'none':
      entry.failures = 0;
      return false;
    case 'forbidden':
      entry.failures += 1;
      log.error({ status: result.status, failures: entry.failures }, `the coordinator refused runner "${runner.name}" (${result.status}): was it deleted or its token revoked? Re-register it or remove it from the config; backing off`);
      return false;
    case 'invalid-build':
      entry.failures = 0;
      log.error({ buildId: result.id }, `the coordinator assigned a build that cannot be run: ${result.message}`);
      if (result.id !== undefined) {
        void reportBuildFailed(entry.client, runner, { id: result.id, token: result.token }, `the runner could not read the build it was given: ${result.message}`, signals.stopJobs, log).then(
          (ok) => {
            if (!ok) log.error({ buildId: result.id }, 'could not report the unreadable build as failed');
          },
          (error: unknown) => log.error({ err: error, buildId: result.id }, 'could not report the unreadable build as failed'),
        );
      } else log.error('the unreadable build carries no id; it cannot be reported and stays running on the server until it times out');
      return false;
    default:
      // 409: another runner won the race for that build (9.x) — nothing for us, and healthy.
      if (result.status === 409) {
        entry.failures = 0;
        return false;
      }
      entry.failures += 1;
      log.warn({ status: result.status, err: result.error?.message, failures: entry.failures }, 'job request failed; backing off');
      return false;
  }
}
