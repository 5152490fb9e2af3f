/**
 * `run-once`: wait for at most one job (up to the wait timeout), run it, and say how it went. No
 * config file: the runner entry comes from flags. Used by CI-in-CI setups and scripts that want one
 * job per process.
 */
import { backoffDelay, sleep } from '../client/backoff.js';
import { RunnerApiClient } from '../client/runner-api.js';
import type { RunnerConfig } from './config/schema.js';
import { JobStop, reportBuildFailed, runJob, type JobOutcome } from './job/run-job.js';
import { SlotAllocator } from './job/slots.js';
import { runnerTls } from './runner-tls.js';
import type { SharedServices } from './services.js';
import type { TlsLabels } from '../client/tls.js';

export type RunOnceResult =
  | { kind: 'job'; outcome: JobOutcome; buildId: number }
  | { kind: 'no-job' }
  | { kind: 'forbidden'; status: number }
  | { kind: 'unreachable'; status: number; error?: string }
  | { kind: 'stopped' };

export interface RunOnceOptions {
  runner: RunnerConfig;
  services: SharedServices;
  /** How long to wait for a job. */
  waitTimeoutMs: number;
  /** Pause between polls that found nothing. */
  pollIntervalMs: number;
  /** Stops waiting for a job (first signal). A job already received still runs. */
  stopWaiting: AbortSignal;
  /** Cancels a running job (shutdown timeout or second signal). */
  stopJob: AbortSignal;
  /** How the runner's TLS files were given, for messages (default: their config.toml keys). */
  tlsLabels?: TlsLabels;
}

/** Polls until a job arrives or time runs out, then runs it. */
export async function runOnce(options: RunOnceOptions): Promise<RunOnceResult> {
  const { runner, services } = options;
  const logger = services.logger.child({ component: 'run-once', runner: runner.name });
  const client = new RunnerApiClient({ url: runner.url, executor: runner.executor, tls: runnerTls(runner, options.tlsLabels) });
  const deadline = Date.now() + options.waitTimeoutMs;
  let lastUpdate: string | undefined;
  let failures = 0;
  let lastError: { status: number; error?: string } | undefined;
  try {
    while (!options.stopWaiting.aborted) {
      // The in-flight poll is not aborted by the first signal: a job it returns must run.
      const result = await client.requestBuild(runner.token, lastUpdate, options.stopJob);
      if ('lastUpdate' in result && result.lastUpdate) lastUpdate = result.lastUpdate;
      if (result.kind === 'build') {
        const outcome = await runJob(result.build, { ...services, runner, client, slots: new SlotAllocator() }, options.stopJob);
        return { kind: 'job', outcome, buildId: result.build.id };
      }
      if (result.kind === 'forbidden') return { kind: 'forbidden', status: result.status };
      if (result.kind === 'invalid-build') {
        logger.error({ buildId: result.id }, `the coordinator assigned a build that cannot be run: ${result.message}`);
        if (result.id !== undefined) await reportBuildFailed(client, runner, result.id, `the runner could not read the build it was given: ${result.message}`, options.stopJob);
        return { kind: 'job', outcome: { state: 'failed', reason: result.message, delivered: result.id !== undefined }, buildId: result.id ?? -1 };
      }
      let delay = options.pollIntervalMs;
      if (result.kind === 'error') {
        failures += 1;
        lastError = { status: result.status, ...(result.error ? { error: result.error.message } : {}) };
        logger.warn({ status: result.status, err: result.error?.message }, 'job request failed; retrying');
        delay = backoffDelay(failures - 1, { baseMs: options.pollIntervalMs, maxMs: 30_000 });
      } else {
        failures = 0;
        lastError = undefined;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      await sleep(Math.min(delay, left), options.stopWaiting).catch(() => undefined);
    }
    if (options.stopWaiting.aborted) return { kind: 'stopped' };
    return lastError ? { kind: 'unreachable', ...lastError } : { kind: 'no-job' };
  } finally {
    await client.close();
  }
}

export { JobStop };
