/**
 * The daemon (`run`): poll loops per `[[runners]]` entry (`request_concurrency`, default 1), sharing
 * `concurrent` job slots.
 *
 * - Idle entries poll every `check_interval` (with jitter); after receiving a job an entry polls again
 *   at once while slots are free, so a queue drains without waiting for ticks (poll-loop.ts).
 * - A slot is reserved before polling, so a job the server hands out always has somewhere to run
 *   (job-capacity.ts).
 * - 403 marks the entry unhealthy (token revoked?) with a growing pause; 5xx/network errors back off
 *   exponentially with jitter (poll-once.ts, poll-loop.ts).
 * - Shutdown, as GitLab Runner's: `shutdown('graceful')` (SIGQUIT) stops polling (an in-flight poll
 *   finishes and its job runs) and lets jobs finish; `shutdown('forceful')` (SIGTERM/SIGINT) also
 *   aborts the running jobs at once, reported failed with `runner_interrupted` (shutdown.ts). The
 *   caller bounds a forceful stop by `shutdown_timeout`.
 * - A reload matches entries by url+token and keeps an unchanged entry's pause and backoff (entry.ts).
 */
import type { RunnerApi } from '../client/api.js';
import { processContainment } from '../executors/cgroup/containment.js';
import type { Logger } from '../log/index.js';
import type { BuildPayload } from '../protocol/types.js';
import { ClientPool } from './clients.js';
import type { Config, RunnerConfig } from './config/schema.js';
import { entryKey, newEntry, reconfigureEntry, retireEntry, type RunnerEntry } from './entry.js';
import { checkExecutor, waitForExecutor, type CheckExecutor } from './executor-check.js';
import { JobCapacity } from './job-capacity.js';
import { runJob, type JobOutcome } from './job/run-job.js';
import { SlotAllocator } from './job/slots.js';
import { fillLoops, type PollLoopContext } from './poll-loop.js';
import { pollOnce } from './poll-once.js';
import { entryReadiness, type RunnerReadiness } from './readiness.js';
import { findJobStateDirs, recoverDeliveries, removeExecutorLeftovers } from './recover.js';
import type { SharedServices } from './services.js';
import { ShutdownSteps, type StopMode } from './shutdown.js';
import { Waits } from './waits.js';

export interface AgentOptions {
  /** Whether an entry's executor can run jobs now (default: `checkExecutor`; tests swap it). */
  checkExecutor?: CheckExecutor;
  /** Pause between checks of an executor that cannot work yet; default one minute. */
  executorRecheckMs?: number;
  /** This host's id (`.runner_system_id`), sent over v4 so the server tells hosts sharing a token apart. */
  systemId?: string;
  /** Wraps each entry's API client (metrics observe every call); `runner` reads the entry's config now. */
  wrapClient?: (client: RunnerApi, runner: () => RunnerConfig) => RunnerApi;
}

export interface AgentEvents {
  jobStarted?(runner: RunnerConfig, build: BuildPayload): void;
  jobFinished?(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void;
}

/** The `run` daemon: owns the poll loops, job slots and two-step shutdown of one process. */
export class Agent {
  private config: Readonly<Config>;
  private readonly entries = new Map<string, RunnerEntry>();
  private readonly clients: ClientPool;
  private readonly slots = new SlotAllocator();
  private readonly jobs = new Set<Promise<void>>();
  private readonly loops = new Set<Promise<void>>();
  private readonly steps = new ShutdownSteps();
  /** Loops pausing until a slot frees, the config changes or shutdown starts. */
  private readonly waits = new Waits();
  private readonly capacity = new JobCapacity(() => this.config.concurrent, this.waits);
  private readonly pollContext: PollLoopContext;
  private logger: Logger;

  constructor(
    config: Readonly<Config>,
    private services: SharedServices,
    private readonly events: AgentEvents = {},
    private readonly options: AgentOptions = {},
  ) {
    this.config = config;
    this.clients = new ClientPool(options.systemId);
    this.logger = services.logger.child({ component: 'agent' });
    this.pollContext = {
      stop: this.steps.stopPolling,
      capacity: this.capacity,
      waits: this.waits,
      checkInterval: () => this.config.check_interval,
      logger: () => this.logger,
      poll: (entry, log) => this.pollOnce(entry, log),
      track: (loop) => this.trackLoop(loop),
    };
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
    return this.steps.stopPolling.aborted;
  }

  /** A new root logger (reloaded `log_level` / `log_format`): used from the next log line and job on. */
  setLogger(logger: Logger): void {
    this.services = { ...this.services, logger };
    this.logger = logger.child({ component: 'agent' });
  }

  /** Starts a poll loop for each runner entry. */
  start(): void {
    this.steps.holdOpen();
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
      reconfigureEntry(entry, runner, intervalChanged);
      entry.client = this.client(entry);
      if (entry.executorOk) fillLoops(entry, this.pollContext);
    }
    for (const [key, entry] of this.entries) {
      if (!keep.has(key)) {
        retireEntry(entry);
        this.entries.delete(key);
      }
    }
    this.logger.info({ runners: config.runners.length, concurrent: config.concurrent }, 'configuration reloaded');
    if (config.runners.length === 0) this.logger.warn('no [[runners]] in the config; nothing to poll until the config changes');
    this.waits.wakeAll();
  }

  /**
   * `graceful`: stop polling and let running jobs finish. `forceful` (at once, or after a graceful
   * stop): also abandon in-flight polls and abort running jobs (`runner_interrupted`). `cause` names
   * what asked, such as the signal.
   */
  shutdown(mode: StopMode = 'graceful', cause?: string): void {
    this.steps.step(mode, this.jobs.size, this.logger, cause);
    this.waits.wakeAll();
    this.services.onStopping?.();
  }

  /**
   * An entry's token was renewed (token-rotation.ts): the entry carries on with the new one at once,
   * keeping its loops, pause and backoff; a reload of the rewritten file then finds it unchanged.
   */
  rotateToken(oldToken: string, next: Pick<RunnerConfig, 'token' | 'token_obtained_at' | 'token_expires_at'>): void {
    this.config = { ...this.config, runners: this.config.runners.map((runner) => (runner.token === oldToken ? { ...runner, ...next } : runner)) };
    for (const [key, entry] of [...this.entries]) {
      if (entry.config.token !== oldToken) continue;
      this.entries.delete(key);
      entry.config = { ...entry.config, ...next };
      entry.key = entryKey(entry.config);
      this.entries.set(entry.key, entry);
    }
  }

  /** The stop under way, if any. */
  get stopMode(): StopMode | undefined {
    return this.steps.mode;
  }


  /**
   * Resolves after `shutdown()` once every poll loop has ended and every job has finished. Never
   * before shutdown: a daemon whose entries cannot take jobs (or that has none) keeps running, as
   * under systemd's Restart=always an exit would only restart it in a loop.
   */
  async done(): Promise<void> {
    await this.steps.stopped;
    while (this.loops.size > 0 || this.jobs.size > 0) await Promise.all([...this.loops, ...this.jobs]);
    // Jobs clean up after their final update; the process ends after that.
    await this.slots.settled();
    await this.clients.close();
  }

  private addEntry(runner: RunnerConfig, options: { recover?: boolean } = {}): void {
    const entry = newEntry(runner);
    entry.client = this.client(entry);
    this.entries.set(entry.key, entry);
    // Taking jobs whose executor cannot work would only fail them: the entry waits until it works.
    const usable = (): Promise<boolean> =>
      waitForExecutor(() => entry.config, () => entry.removed, {
        check: this.options.checkExecutor ?? checkExecutor,
        recheckMs: this.options.executorRecheckMs ?? 60_000,
        logger: this.logger,
        stop: this.steps.stopPolling,
        wake: () => entry.reloaded.signal,
        onResult: (result) => {
          entry.executorOk = result.ok;
          entry.executorReason = result.ok ? undefined : result.reason;
        },
      });
    this.trackLoop(
      (options.recover ? this.recover(entry) : Promise.resolve())
        .then(usable)
        .then((ok) => {
          if (ok) fillLoops(entry, this.pollContext);
        })
        .catch((error: unknown) => {
          this.logger.error({ err: error, runner: entry.config.name }, 'executor check crashed');
        }),
    );
  }

  /** Keeps `loop` in `loops` until it settles (done() waits for it). */
  private trackLoop(loop: Promise<void>): void {
    const tracked: Promise<void> = loop.finally(() => this.loops.delete(tracked));
    this.loops.add(tracked);
  }

  /** The entry's API client, wrapped for metrics when asked to be. */
  private client(entry: RunnerEntry): RunnerApi {
    const client = this.clients.get(entry.config, this.config.connection_max_age);
    return this.options.wrapClient ? this.options.wrapClient(client, () => entry.config) : client;
  }

  /** Finds owed final updates of earlier runs before the first poll, then sends them alongside. */
  private async recover(entry: RunnerEntry): Promise<void> {
    // Once per process, alongside the first poll (a job's executor waits for it): logs which
    // containment jobs get and removes the job cgroups of a dead earlier run.
    void processContainment(this.logger).catch((error: unknown) => this.logger.warn({ err: error }, 'could not set up job cgroups'));
    await removeExecutorLeftovers(entry.config, this.logger);
    const dirs = await findJobStateDirs(entry.config).catch(() => []);
    if (dirs.length === 0) return;
    const log = this.logger.child({ runner: entry.config.name });
    // Handled here: a rejection would otherwise surface only through done(), and unhandled before.
    const recovery = recoverDeliveries(dirs, entry.config, entry.client, this.steps.stopJobs, log).catch((error: unknown) => {
      log.error({ err: error }, 'recovering the final updates of an earlier run failed');
    });
    this.jobs.add(recovery);
    void recovery.finally(() => this.jobs.delete(recovery));
  }

  /** One E4; returns true when a job was started (its slot stays reserved until it ends). */
  private pollOnce(entry: RunnerEntry, log: Logger): Promise<boolean> {
    return pollOnce(entry, log, { abortPolls: this.steps.abortPolls, stopJobs: this.steps.stopJobs }, (build) => this.startJob(entry, build));
  }

  private startJob(entry: RunnerEntry, build: BuildPayload): void {
    this.capacity.jobStarted(entry);
    const runner = entry.config;
    this.events.jobStarted?.(runner, build);
    const job = runJob(build, { ...this.services, runner, client: entry.client, slots: this.slots }, this.steps.stopJobs)
      .then((outcome) => this.events.jobFinished?.(runner, build, outcome))
      .catch((error: unknown) => this.logger.error({ err: error, jobId: build.id }, 'job crashed'))
      .finally(() => {
        this.jobs.delete(job);
        this.capacity.jobEnded(entry);
      });
    this.jobs.add(job);
  }
}
