/**
 * `run-once` / `run-single` without a config file: take up to `maxBuilds` jobs (0 = no limit), at
 * most `limit` at a time, with up to `requestConcurrency` job requests in flight, and stop when no
 * job has arrived for the wait timeout (counted from the start and from the end of each job, as
 * GitLab Runner's `run-single` does; 0 = wait without limit).
 *
 * A request is sent only with room for the job it may return (a place under `limit` and under
 * `maxBuilds` is reserved first), so a job handed out always runs and never one too many is taken.
 */
import { Backoff } from '../client/retry.js';
import { worthRetrying } from '../client/retryable.js';
import type { RunnerApi } from '../client/api.js';
import { createRunnerApi } from '../client/connect.js';
import type { BuildPayload } from '../protocol/types.js';
import type { RunnerConfig } from './config/schema.js';
import { reportBuildFailed, runJob, type JobOutcome } from './job/run-job.js';
import { SlotAllocator } from './job/slots.js';
import { runnerTls } from './runner-tls.js';
import type { TlsLabels } from '../client/tls.js';
import type { SharedServices } from './services.js';
import { sleep } from '../util/timers.js';

export interface RunJobsOptions {
  runner: RunnerConfig;
  services: SharedServices;
  /** Stop after this long without a job arriving; 0 = no limit. */
  waitTimeoutMs: number;
  /** Pause between polls that found nothing. */
  pollIntervalMs: number;
  /** Jobs to take before stopping; 0 = no limit. */
  maxBuilds: number;
  /** Most jobs running at once (≥ 1). */
  limit: number;
  /** Most job requests in flight at once (≥ 1). */
  requestConcurrency: number;
  /** Stops taking jobs (first signal). Jobs already received still run. */
  stopWaiting: AbortSignal;
  /** Cancels running jobs (shutdown timeout or second signal). */
  stopJob: AbortSignal;
  /** A job arrived and is about to run. */
  onJobStarted?: (build: BuildPayload) => void;
  /** A job ended (its final state is delivered, or delivery was given up). */
  onJobFinished?: (buildId: number, outcome: JobOutcome) => void;
  /** How the runner's TLS files were given, for messages (default: their config.toml keys). */
  tlsLabels?: TlsLabels;
  /** This host's id, sent over v4 and shown in each trace's header. */
  systemId?: string;
}

export interface JobResult {
  buildId: number;
  outcome: JobOutcome;
}

/** Why no more jobs were taken. */
export type RunJobsEnd =
  | { kind: 'max-builds' }
  | { kind: 'no-job' }
  | { kind: 'forbidden'; status: number }
  | { kind: 'unreachable'; status: number; error?: string }
  | { kind: 'stopped' };

export interface RunJobsResult {
  jobs: JobResult[];
  ended: RunJobsEnd;
}

/** Takes and runs jobs until one of the stop conditions holds, then waits for the running ones. */
export async function runJobs(options: RunJobsOptions): Promise<RunJobsResult> {
  const { runner } = options;
  const client = createRunnerApi({ url: runner.url, api: runner.api, executor: runner.executor, shell: runner.shell, tls: runnerTls(runner, options.tlsLabels), systemId: options.systemId });
  const loop = new JobLoop(options, client);
  try {
    return await loop.run();
  } finally {
    await client.close();
  }
}

class JobLoop {
  private running = 0;
  private polling = 0;
  private taken = 0;
  private lastActivity = Date.now();
  private lastUpdate: string | undefined;
  private lastError: { status: number; error?: string } | undefined;
  private ended: RunJobsEnd | undefined;
  private readonly results: JobResult[] = [];
  private readonly jobs = new Set<Promise<void>>();
  private readonly slots = new SlotAllocator();
  /** Settles at the next change of room or state (a job ended, the loop ended, a stop signal). */
  private wake = signalled();

  /** Failed job requests in a row: backoff from the poll interval up to 30 s (or the server's Retry-After). */
  private readonly backoff: Backoff;

  constructor(
    private readonly options: RunJobsOptions,
    private readonly client: RunnerApi,
  ) {
    this.backoff = new Backoff({ baseMs: options.pollIntervalMs, maxMs: 30_000 });
  }

  async run(): Promise<RunJobsResult> {
    const onStop = (): void => this.notify();
    this.options.stopWaiting.addEventListener('abort', onStop, { once: true });
    try {
      const pollers = Math.max(1, this.options.requestConcurrency);
      await Promise.all(Array.from({ length: pollers }, () => this.poll()));
    } finally {
      this.options.stopWaiting.removeEventListener('abort', onStop);
    }
    while (this.jobs.size > 0) await Promise.all(this.jobs);
    // Jobs clean up after their final update (slots.ts); the caller sees the dirs as they are left.
    await this.slots.settled();
    const ended: RunJobsEnd = this.ended ?? (this.options.stopWaiting.aborted ? { kind: 'stopped' } : { kind: 'max-builds' });
    return { jobs: this.results, ended };
  }

  private get done(): boolean {
    const { maxBuilds, stopWaiting } = this.options;
    return stopWaiting.aborted || this.ended !== undefined || (maxBuilds > 0 && this.taken >= maxBuilds);
  }

  /** Room for one more job: under `limit` and `maxBuilds`, counting requests in flight. */
  private get hasRoom(): boolean {
    const { maxBuilds, limit } = this.options;
    return this.running + this.polling < Math.max(1, limit) && (maxBuilds === 0 || this.taken + this.polling < maxBuilds);
  }

  /** Milliseconds of waiting left; Infinity while a job runs or without a wait timeout. */
  private get waitLeft(): number {
    const { waitTimeoutMs } = this.options;
    if (waitTimeoutMs <= 0 || this.running > 0) return Number.POSITIVE_INFINITY;
    return waitTimeoutMs - (Date.now() - this.lastActivity);
  }

  private notify(): void {
    this.wake.resolve();
    this.wake = signalled();
  }

  /** One request loop; `requestConcurrency` of them run side by side. */
  private async poll(): Promise<void> {
    const { runner, stopJob, stopWaiting, pollIntervalMs } = this.options;
    const logger = this.options.services.logger.child({ component: 'run-once', runner: runner.name });
    while (!this.done) {
      if (!this.hasRoom) {
        await this.wake.promise;
        continue;
      }
      if (this.waitLeft <= 0) {
        this.end(this.lastError ? { kind: 'unreachable', ...this.lastError } : { kind: 'no-job' });
        break;
      }
      this.polling += 1;
      // The in-flight poll is not aborted by the first signal: a job it returns must run.
      const result = await this.client.requestBuild(runner.token, this.lastUpdate, stopJob).finally(() => {
        this.polling -= 1;
      });
      if ('lastUpdate' in result && result.lastUpdate) this.lastUpdate = result.lastUpdate;
      if (result.kind === 'build') {
        this.start(result.build);
        continue;
      }
      if (result.kind === 'forbidden') {
        this.end({ kind: 'forbidden', status: result.status });
        break;
      }
      if (result.kind === 'invalid-build') {
        logger.error({ buildId: result.id }, `the coordinator assigned a build that cannot be run: ${result.message}`);
        this.taken += 1;
        if (result.id !== undefined) await reportBuildFailed(this.client, runner, { id: result.id, token: result.token }, `the runner could not read the build it was given: ${result.message}`, stopJob, logger);
        this.record(result.id ?? -1, { state: 'failed', reason: result.message, delivered: result.id !== undefined });
        continue;
      }
      let delay = pollIntervalMs;
      if (result.kind === 'error') {
        this.lastError = { status: result.status, ...(result.error ? { error: result.error.message } : {}) };
        if (!worthRetrying(result)) {
          // No later request can go differently (a proxy URL that is not one): say so now, not at the wait timeout.
          this.end({ kind: 'unreachable', ...this.lastError });
          break;
        }
        logger.warn({ status: result.status, err: result.error?.message }, 'job request failed; retrying');
        delay = this.backoff.failed(result.retryAfterMs);
      } else {
        this.backoff.succeeded();
        this.lastError = undefined;
      }
      await sleep(Math.max(0, Math.min(delay, this.waitLeft)), stopWaiting).catch(() => undefined);
    }
    this.notify();
  }

  private start(build: BuildPayload): void {
    const { runner, services, stopJob } = this.options;
    this.taken += 1;
    this.running += 1;
    this.lastActivity = Date.now();
    this.options.onJobStarted?.(build);
    const job = runJob(build, { ...services, runner, client: this.client, slots: this.slots }, stopJob).then((outcome) => {
      this.running -= 1;
      this.jobs.delete(job);
      this.record(build.id, outcome);
    });
    this.jobs.add(job);
  }

  private record(buildId: number, outcome: JobOutcome): void {
    this.lastActivity = Date.now();
    this.results.push({ buildId, outcome });
    this.options.onJobFinished?.(buildId, outcome);
    this.notify();
  }

  private end(ended: RunJobsEnd): void {
    this.ended ??= ended;
    this.notify();
  }
}

/** A promise with its resolve function (Promise.withResolvers needs Node 22). */
function signalled(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
