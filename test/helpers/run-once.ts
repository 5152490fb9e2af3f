/**
 * `runOnce` for tests: wait for at most one job (up to the wait timeout), run it, and say how it
 * went. No config file: the runner entry comes from the caller. The one-job case of `runJobs`, which
 * `ci-runner run-once` (`run-single`) runs too, so a test of a job goes through the command's path.
 */
import type { RunnerConfig } from '../../src/agent/config/schema.js';
import type { JobOutcome } from '../../src/agent/job/run-job.js';
import { runJobs } from '../../src/agent/run-jobs.js';
import type { SharedServices } from '../../src/agent/services.js';
import type { TlsLabels } from '../../src/client/tls.js';

export type RunOnceResult =
  | { kind: 'job'; outcome: JobOutcome; buildId: number }
  | { kind: 'no-job' }
  | { kind: 'forbidden'; status: number }
  | { kind: 'unreachable'; status: number; error?: string }
  | { kind: 'stopped' };

export interface RunOnceOptions {
  runner: RunnerConfig;
  services: SharedServices;
  /** How long to wait for a job; 0 = no limit. */
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
  const { jobs, ended } = await runJobs({ ...options, maxBuilds: 1, limit: 1, requestConcurrency: 1 });
  const job = jobs[0];
  if (job) return { kind: 'job', outcome: job.outcome, buildId: job.buildId };
  return ended.kind === 'max-builds' ? { kind: 'no-job' } : ended;
}

