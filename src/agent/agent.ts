/**
 * The daemon (`run`): poll loops per `[[runners]]` entry (`request_concurrency`, default 1), sharing
 * `concurrent` job slots.
 *
 * - Idle entries poll every `check_interval` (with jitter); after receiving a job an entry polls again
 *   at once while slots are free, so a queue drains without waiting for ticks.
 * - A slot is reserved before polling, so a job the server hands out always has somewhere to run.
 * - 403 marks the entry unhealthy (token revoked?) with a growing pause; 5xx/network errors back off
 *   exponentially with jitter.
 * - Shutdown is two steps: `shutdown()` stops polling (an in-flight poll finishes and its job runs),
 *   waits `shutdown_timeout` for jobs, then cancels them; a second `shutdown()` cancels at once.
 */
import { backoffDelay } from '../client/backoff.js';
import type { RunnerApiClient } from '../client/runner-api.js';
import { processContainment } from '../executors/cgroup/containment.js';
import type { Logger } from '../log.js';
import type { BuildPayload } from '../protocol/types.js';
import { ClientPool } from './clients.js';
import type { Config, RunnerConfig } from './config/schema.js';
import { checkExecutor, waitForExecutor, type CheckExecutor } from './executor-check.js';
import { JobStop, runJob, type JobOutcome } from './job/run-job.js';
import { pollOnce } from './poll-once.js';
import { SlotAllocator } from './job/slots.js';
import { entryReadiness, type RunnerReadiness } from './readiness.js';
import { findJobStateDirs, recoverDeliveries, removeExecutorLeftovers } from './recover.js';
import type { SharedServices } from './services.js';
import { setLongTimeout, type LongTimer } from '../timers.js';
import { Waits } from './waits.js';

export interface AgentOptions {
  /** Whether an entry's executor can run jobs now (default: `checkExecutor`; tests swap it). */
  checkExecutor?: CheckExecutor;
  /** Pause between checks of an executor that cannot work yet; default one minute. */
  executorRecheckMs?: number;
  /** Wraps each entry's API client (metrics observe every call); `runner` reads the entry's config now. */
  wrapClient?: (client: RunnerApiClient, runner: () => RunnerConfig) => RunnerApiClient;
}

export interface AgentEvents {
  jobStarted?(runner: RunnerConfig, build: BuildPayload): void;
  jobFinished?(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void;
}

interface Entry {
  key: string;
  config: RunnerConfig;
  client: RunnerApiClient;
  running: number;
  polling: number;
  lastUpdate?: string;
  failures: number;
  lastStatus?: number;
  removed: boolean;
  /** Aborted by every reload, so an entry waiting for its executor checks again at once. */
  reloaded: AbortController;
  /** Aborted by a reload that changed the entry (or check_interval): ends its poll pause early. */
  changed: AbortController;
  /** Poll loops running; a reload raising or lowering `request_concurrency` adds or ends some. */
  loopCount: number;
  /** The executor check's last answer (undefined until the first). */
  executorOk?: boolean;
  executorReason?: string;
}

/** The `run` daemon: owns the poll loops, job slots and two-step shutdown of one process. */
export class Agent {
  private config: Readonly<Config>;
  private readonly entries = new Map<string, Entry>();
  private readonly clients = new ClientPool();
  private readonly slots = new SlotAllocator();
  private readonly jobs = new Set<Promise<void>>();
  private readonly loops = new Set<Promise<void>>();
  private readonly stopPolling = new AbortController();
  private readonly abortPolls = new AbortController();
  private readonly stopJobs = new AbortController();
  private reserved = 0;
  /** Loops pausing until a slot frees, the config changes or shutdown starts. */
  private readonly waits = new Waits();
  private shutdowns = 0;
  private shutdownTimer: LongTimer | undefined;
  private logger: Logger;
  /** Settles when shutdown starts: until then the daemon runs, even with nothing to poll. */
  private readonly stopped: Promise<void>;
  /** A pending promise does not keep Node's event loop alive; this timer does, until shutdown. */
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    config: Readonly<Config>,
    private services: SharedServices,
    private readonly events: AgentEvents = {},
    private readonly options: AgentOptions = {},
  ) {
    this.config = config;
    this.logger = services.logger.child({ component: 'agent' });
    const stop = this.stopPolling.signal;
    this.stopped = new Promise((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** Number of jobs running now. */
  get runningJobs(): number {
    return this.jobs.size;
  }

  /** Per entry: can it take jobs now, and if not, why (`/readyz`). */
  readiness(): RunnerReadiness[] {
    return [...this.entries.values()].map((entry) =>
      entryReadiness({ name: entry.config.name, executorOk: entry.executorOk, executorReason: entry.executorReason, lastStatus: entry.lastStatus, failures: entry.failures }),
    );
  }

  /** True once shutdown has started. */
  get stopping(): boolean {
    return this.stopPolling.signal.aborted;
  }

  /** A new root logger (reloaded `log_level` / `log_format`): used from the next log line and job on. */
  setLogger(logger: Logger): void {
    this.services = { ...this.services, logger };
    this.logger = logger.child({ component: 'agent' });
  }

  /** Starts a poll loop for each runner entry. */
  start(): void {
    this.keepAlive ??= setInterval(() => undefined, 2 ** 31 - 1);
    if (this.config.runners.length === 0) this.logger.warn('no [[runners]] in the config; register one with `ci-runner register` or edit the config file (changes are picked up as they are saved); waiting');
    for (const runner of this.config.runners) this.addEntry(runner, { recover: true });
    this.logger.info({ runners: this.config.runners.length, concurrent: this.config.concurrent }, 'polling for jobs');
  }

  /** Swaps in a new config (SIGHUP): entries are matched by url+token; removed ones stop polling. */
  reload(config: Readonly<Config>): void {
    const intervalChanged = config.check_interval !== this.config.check_interval;
    this.config = config;
    const keep = new Set<string>();
    for (const runner of config.runners) {
      const key = entryKey(runner);
      keep.add(key);
      const entry = this.entries.get(key);
      if (!entry) {
        this.addEntry(runner);
        continue;
      }
      const changed = JSON.stringify(runner) !== JSON.stringify(entry.config);
      entry.config = runner;
      entry.client = this.client(entry);
      // An unchanged entry keeps its pause and its backoff: rewriting config.toml (register adding
      // another entry) must not make every other entry poll at once, nor forgive a refused token.
      if (changed || intervalChanged) {
        entry.failures = 0;
        entry.changed.abort();
        entry.changed = new AbortController();
      }
      entry.reloaded.abort();
      entry.reloaded = new AbortController();
      if (entry.executorOk) this.fillLoops(entry);
    }
    for (const [key, entry] of this.entries) {
      if (!keep.has(key)) {
        entry.removed = true;
        entry.reloaded.abort();
        entry.changed.abort();
        this.entries.delete(key);
      }
    }
    this.logger.info({ runners: config.runners.length, concurrent: config.concurrent }, 'configuration reloaded');
    if (config.runners.length === 0) this.logger.warn('no [[runners]] in the config; nothing to poll until the config changes');
    this.waits.wakeAll();
  }

  /**
   * First call: stop polling, let jobs finish for `shutdown_timeout`, then cancel them. A second
   * call cancels them at once (and abandons in-flight polls).
   */
  shutdown(): void {
    this.shutdowns += 1;
    clearInterval(this.keepAlive);
    if (this.shutdowns === 1) {
      this.logger.info({ jobs: this.jobs.size, timeoutS: this.config.shutdown_timeout }, 'shutting down: no new jobs; waiting for running jobs');
      this.stopPolling.abort();
      this.shutdownTimer = setLongTimeout(
        () => this.cancelJobs(`the runner is shutting down and the job did not finish within shutdown_timeout (${this.config.shutdown_timeout} s)`),
        this.config.shutdown_timeout * 1000,
        { unref: true },
      );
    } else {
      this.logger.warn({ jobs: this.jobs.size }, 'forced shutdown: canceling running jobs');
      this.abortPolls.abort();
      this.cancelJobs('the runner was stopped (forced shutdown)');
    }
    this.waits.wakeAll();
  }

  /**
   * Resolves after `shutdown()` once every poll loop has ended and every job has finished. Never
   * before shutdown: a daemon whose entries cannot take jobs (or that has none) keeps running, as
   * under systemd's Restart=always an exit would only restart it in a loop.
   */
  async done(): Promise<void> {
    await this.stopped;
    while (this.loops.size > 0 || this.jobs.size > 0) await Promise.all([...this.loops, ...this.jobs]);
    this.shutdownTimer?.clear();
    await this.clients.close();
  }

  private cancelJobs(reason: string): void {
    if (!this.stopJobs.signal.aborted) this.stopJobs.abort(new JobStop(reason));
  }

  private addEntry(runner: RunnerConfig, options: { recover?: boolean } = {}): void {
    const entry: Entry = { key: entryKey(runner), config: runner, running: 0, polling: 0, failures: 0, removed: false, reloaded: new AbortController(), changed: new AbortController(), loopCount: 0 } as Omit<Entry, 'client'> as Entry;
    entry.client = this.client(entry);
    this.entries.set(entry.key, entry);
    // Taking jobs whose executor cannot work would only fail them: the entry waits until it works.
    const usable = (): Promise<boolean> =>
      waitForExecutor(() => entry.config, () => entry.removed, {
        check: this.options.checkExecutor ?? checkExecutor,
        recheckMs: this.options.executorRecheckMs ?? 60_000,
        logger: this.logger,
        stop: this.stopPolling.signal,
        wake: () => entry.reloaded.signal,
        onResult: (result) => {
          entry.executorOk = result.ok;
          entry.executorReason = result.ok ? undefined : result.reason;
        },
      });
    const loop: Promise<void> = (options.recover ? this.recover(entry) : Promise.resolve())
      .then(usable)
      .then((ok) => {
        if (ok) this.fillLoops(entry);
      })
      .catch((error: unknown) => {
        this.logger.error({ err: error, runner: entry.config.name }, 'executor check crashed');
      })
      .finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  /** The entry's API client, wrapped for metrics when asked to be. */
  private client(entry: Entry): RunnerApiClient {
    const client = this.clients.get(entry.config);
    return this.options.wrapClient ? this.options.wrapClient(client, () => entry.config) : client;
  }

  /**
   * Starts poll loops until the entry has `request_concurrency` of them (each holds at most one job
   * request at a time). Surplus loops after a reload lowered it end themselves (see pollLoop).
   */
  private fillLoops(entry: Entry): void {
    while (entry.loopCount < entry.config.request_concurrency && !entry.removed && !this.stopPolling.signal.aborted) {
      entry.loopCount += 1;
      const loop: Promise<void> = this.pollLoop(entry)
        .catch((error: unknown) => {
          this.logger.error({ err: error, runner: entry.config.name }, 'poll loop crashed');
        })
        .finally(() => this.loops.delete(loop));
      this.loops.add(loop);
    }
  }

  /** Finds owed final updates of earlier runs before the first poll, then sends them alongside. */
  private async recover(entry: Entry): Promise<void> {
    // Once per process, alongside the first poll (a job's executor waits for it): logs which
    // containment jobs get and removes the job cgroups of a dead earlier run.
    void processContainment(this.logger).catch((error: unknown) => this.logger.warn({ err: error }, 'could not set up job cgroups'));
    await removeExecutorLeftovers(entry.config, this.logger);
    const dirs = await findJobStateDirs(entry.config).catch(() => []);
    if (dirs.length === 0) return;
    const log = this.logger.child({ runner: entry.config.name });
    // Handled here: a rejection would otherwise surface only through done(), and unhandled before.
    const recovery = recoverDeliveries(dirs, entry.config, entry.client, this.stopJobs.signal, log).catch((error: unknown) => {
      log.error({ err: error }, 'recovering the final updates of an earlier run failed');
    });
    this.jobs.add(recovery);
    void recovery.finally(() => this.jobs.delete(recovery));
  }

  private hasSlot(entry: Entry): boolean {
    const { limit, request_concurrency } = entry.config;
    return this.reserved < this.config.concurrent && (limit === 0 || entry.running + entry.polling < limit) && entry.polling < request_concurrency;
  }

  /**
   * Waits until a slot may have freed (a job ended, a poll released its reservation, a reload), or
   * shutdown starts; at most a minute, in case a wake-up was missed. Only loops that found no slot wait
   * here: waking them is what the shared waiter set is for.
   */
  private async waitForSlot(): Promise<void> {
    await this.waits.wait(60_000, [this.stopPolling.signal], true);
  }

  /**
   * The entry's check_interval or backoff pause. Nothing another loop does shortens it (a poll
   * finishing elsewhere must not make this entry poll early: with several entries that was a poll
   * storm); only shutdown, or a reload that changed or removed this entry, ends it early.
   */
  private async rest(entry: Entry, ms: number): Promise<void> {
    await this.waits.wait(ms, [this.stopPolling.signal, entry.changed.signal], false);
  }

  private async pollLoop(entry: Entry): Promise<void> {
    let left = false;
    try {
      left = await this.pollUntilStopped(entry);
    } finally {
      if (!left) entry.loopCount -= 1;
    }
  }

  /** Polls until shutdown or removal; true when it left as a surplus loop (already uncounted). */
  private async pollUntilStopped(entry: Entry): Promise<boolean> {
    while (!this.stopPolling.signal.aborted && !entry.removed) {
      if (entry.loopCount > entry.config.request_concurrency) {
        // Uncounted here, in the same step as the check, so two surplus loops cannot both leave.
        entry.loopCount -= 1;
        return true;
      }
      if (!this.hasSlot(entry)) {
        await this.waitForSlot();
        continue;
      }
      this.reserved += 1;
      entry.polling += 1;
      let got = false;
      try {
        got = await this.pollOnce(entry, this.logger.child({ runner: entry.config.name }));
      } finally {
        entry.polling -= 1;
        if (!got) {
          this.reserved -= 1;
          this.waits.wakeAll();
        }
      }
      if (got) continue; // poll again at once while slots are free
      const delay = entry.failures > 0 ? this.failureDelay(entry) : jitter(this.config.check_interval * 1000);
      await this.rest(entry, delay);
    }
    return false;
  }

  private failureDelay(entry: Entry): number {
    const base = this.config.check_interval * 1000;
    return backoffDelay(entry.failures - 1, { baseMs: base, maxMs: entry.lastStatus === 403 ? 3_600_000 : 60_000 });
  }

  /** One E4; returns true when a job was started (its slot stays reserved until it ends). */
  private pollOnce(entry: Entry, log: Logger): Promise<boolean> {
    return pollOnce(entry, log, { abortPolls: this.abortPolls.signal, stopJobs: this.stopJobs.signal }, (build) => this.startJob(entry, build));
  }

  private startJob(entry: Entry, build: BuildPayload): void {
    entry.running += 1;
    const runner = entry.config;
    this.events.jobStarted?.(runner, build);
    const job = runJob(build, { ...this.services, runner, client: entry.client, slots: this.slots }, this.stopJobs.signal)
      .then((outcome) => this.events.jobFinished?.(runner, build, outcome))
      .catch((error: unknown) => this.logger.error({ err: error, jobId: build.id }, 'job crashed'))
      .finally(() => {
        entry.running -= 1;
        this.reserved -= 1;
        this.jobs.delete(job);
        this.waits.wakeAll();
      });
    this.jobs.add(job);
  }
}

function entryKey(runner: RunnerConfig): string {
  return `${runner.url}\u0000${runner.token}`;
}

/** ±20 % around `ms`, so many runners do not poll in lockstep. */
function jitter(ms: number): number {
  return Math.round(ms * (0.8 + Math.random() * 0.4));
}
