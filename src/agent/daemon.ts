/**
 * The `run` daemon around the agent: the root logger, the status server on `listen_address` with its
 * metrics, and reloads (SIGHUP or a change of config.toml on disk) that apply the whole new file:
 * entries, limits, intervals, logging and the status server's address. Reloads run one at a time.
 */
import type { Logger } from '../log/index.js';
import { configLogger, loggerLevel } from './config-logger.js';
import { Agent } from './agent.js';
import { loadConfigWithWarnings } from './config-read.js';
import { watchConfig, type ConfigWatcher } from './config-watch.js';
import { configListenAddress, type Config } from './config/schema.js';
import { parseListenAddress } from './config/listen-address.js';
import { observedClient, observedServices } from './metrics/instrument.js';
import type { ObserverSlot } from './metrics/observer.js';
import type { RunnerMetrics } from './metrics/registry.js';
import type { StatusServer } from './metrics/server.js';
import type { RunAs } from '../executors/run-as.js';
import { defaultServices } from './services.js';
import type { StopMode } from './shutdown.js';
import { TokenRotation } from './token-rotation.js';
import type { RunnerApi } from '../client/api.js';

export interface DaemonOptions {
  configPath: string;
  config: Readonly<Config>;
  /** `run --listen-address`: wins over the config's `listen_address`. */
  listenAddress?: string;
  /** The user shell jobs run as (global `user`, looked up at start). */
  runAs?: RunAs;
  /** This host's id (`.runner_system_id` beside the config), sent over v4. */
  systemId?: string;
  /** Quiet time before a file change is read; default 300 ms. */
  watchDebounceMs?: number;
  /** `--log-level`/`--debug`: wins over the config's `log_level`, also after reloads (as in GitLab Runner). */
  logLevel?: Config['log_level'] | 'silent';
}

type LogSettings = { log_level: Config['log_level'] | 'silent'; log_format: Config['log_format'] };

export class Daemon {
  readonly agent: Agent;
  private config: Readonly<Config>;
  private logger: Logger;
  private readonly slot: ObserverSlot = {};
  private metrics: RunnerMetrics | undefined;
  private status: { address: string; server: StatusServer } | undefined;
  private watcher: ConfigWatcher | undefined;
  private queue: Promise<void> = Promise.resolve();
  private started = false;
  private readonly tokens: TokenRotation;

  constructor(private readonly options: DaemonOptions) {
    this.config = options.config;
    this.logger = configLogger(this.logSettings(options.config));
    const slot = this.slot;
    this.agent = new Agent(
      options.config,
      observedServices(defaultServices(this.logger, options.runAs), slot),
      {
        jobStarted: (runner, build) => slot.current?.jobStarted(runner, build),
        jobFinished: (runner, build, outcome) => slot.current?.jobFinished(runner, build, outcome),
      },
      { wrapClient: (client, runner) => observedClient(client, runner, slot), ...(options.systemId ? { systemId: options.systemId } : {}) },
    );
    this.tokens = new TokenRotation({
      configPath: options.configPath,
      config: () => this.config,
      logger: () => this.logger,
      ...(options.systemId ? { systemId: options.systemId } : {}),
      rotated: (oldToken, next) => {
        this.config = { ...this.config, runners: this.config.runners.map((runner) => (runner.token === oldToken ? { ...runner, ...next } : runner)) };
        this.agent.rotateToken(oldToken, next);
      },
      saved: (ok) => slot.current?.configSaved(ok),
      wrapClient: (client, runner) => observedClient(client as unknown as RunnerApi, () => runner, slot) as unknown as typeof client,
    });
  }

  /** `shutdown_timeout` of the config in force, in ms: how long a forceful stop may take. */
  get shutdownTimeoutMs(): number {
    return this.config.shutdown_timeout * 1000;
  }

  /** The current root logger (replaced when a reload changes `log_format`). */
  get log(): Logger {
    return this.logger;
  }

  /** Starts the status server (when asked for), the poll loops and the file watch. */
  start(): Promise<void> {
    // A reload asked for meanwhile (SIGHUP) waits for this in the queue.
    this.queue = this.startAll();
    return this.queue;
  }

  /**
   * Stops the daemon: `graceful` (SIGQUIT) lets running jobs finish, `forceful` (SIGTERM/SIGINT)
   * aborts them (Agent.shutdown); `cause` names the signal.
   */
  stop(mode: StopMode, cause: string): void {
    void this.tokens.stop();
    this.agent.shutdown(mode, cause);
    this.slot.current?.processState(this.agent.stopMode === 'forceful' ? 'forceful-shutdown' : 'graceful-shutdown');
  }

  private async startAll(): Promise<void> {
    // The observer before the first poll, so every request is counted; the server after.
    if (this.wantedAddress() !== undefined) await this.loadMetrics();
    this.agent.start();
    this.tokens.schedule();
    this.started = true;
    this.slot.current?.processState('running');
    await this.applyListenAddress();
    this.watcher = await watchConfig(this.options.configPath, {
      logger: this.logger,
      ...(this.options.watchDebounceMs !== undefined ? { debounceMs: this.options.watchDebounceMs } : {}),
      onChange: () => void this.reload('file change'),
      onDelete: () => this.logger.warn({ config: this.options.configPath }, 'the config file was deleted; keeping the current config until it is back'),
    }).catch((error: unknown) => {
      this.logger.warn({ err: (error as Error).message }, 'cannot watch the config file; reload with SIGHUP after editing it');
      return undefined;
    });
    if (this.watcher) this.logger.info({ config: this.options.configPath }, 'watching the config file for changes');
  }

  /** Reads the config again and applies all of it; an invalid file keeps the old config. */
  reload(source: 'SIGHUP' | 'file change'): Promise<void> {
    this.queue = this.queue.catch(() => undefined).then(() => this.applyReload(source));
    return this.queue;
  }

  /** After the agent is done: stops watching and closes the status server. */
  async close(): Promise<void> {
    await this.tokens.stop();
    await this.queue;
    await this.watcher?.close();
    await this.status?.server.close();
    this.status = undefined;
  }

  private async applyReload(source: string): Promise<void> {
    if (this.agent.stopping) return;
    let next: Readonly<Config>;
    try {
      next = (await loadConfigWithWarnings(this.options.configPath)).config;
    } catch (error) {
      this.metrics?.configReloaded(false);
      this.logger.error({ source, err: (error as Error).message }, `${source}: the config cannot be used; keeping the old one`);
      return;
    }
    const before = this.config;
    this.config = next;
    this.applyLogging(this.logSettings(before), this.logSettings(next));
    this.agent.reload(next);
    this.tokens.schedule();
    await this.applyListenAddress();
    this.metrics?.configReloaded(true);
    this.logger.info({ source, runners: next.runners.length }, `${source}: config reloaded`);
  }

  /**
   * A new level is set on the root logger, which pino's children (running jobs' too) follow unless
   * given their own; a new format needs a new root logger, used from the next job on.
   */
  private applyLogging(before: LogSettings, next: LogSettings): void {
    if (before.log_format === next.log_format && before.log_level === next.log_level) return;
    if (before.log_format === next.log_format) this.logger.level = loggerLevel(next.log_level);
    else this.logger = configLogger(next);
    this.agent.setLogger(this.logger);
  }

  private logSettings(config: LogSettings): LogSettings {
    return this.options.logLevel === undefined ? config : { ...config, log_level: this.options.logLevel };
  }

  private wantedAddress(): string | undefined {
    return this.options.listenAddress ?? configListenAddress(this.config);
  }

  /** The metrics, created on first use and observing from then on. */
  private async loadMetrics(): Promise<RunnerMetrics> {
    // prom-client is loaded only now: a daemon without a status server does not carry it.
    if (!this.metrics) {
      const { RunnerMetrics } = await import('./metrics/registry.js');
      this.metrics = new RunnerMetrics(() => this.config, this.options.systemId);
      if (this.started) this.metrics.processState('running');
    }
    this.slot.current = this.metrics;
    return this.metrics;
  }

  /** Starts, moves or stops the status server to match the wanted address. */
  private async applyListenAddress(): Promise<void> {
    const wanted = this.wantedAddress();
    if (this.status?.address === wanted) return;
    if (this.status) {
      await this.status.server.close();
      this.logger.info({ url: this.status.server.url }, 'status server stopped');
      this.status = undefined;
    }
    if (wanted === undefined) {
      this.slot.current = undefined;
      return;
    }
    const address = parseListenAddress(wanted);
    if (!address) {
      this.logger.error({ listenAddress: wanted }, 'listen address is not "host:port"; no status server');
      return;
    }
    const metrics = await this.loadMetrics();
    try {
      const { startStatusServer } = await import('./metrics/server.js');
      const server = await startStatusServer(address, {
        readiness: () => ({ stopping: this.agent.stopping, runners: this.agent.readiness() }),
        runningJobs: () => metrics.runningJobs(),
        runningJobsText: () => metrics.runningJobsText(),
        processState: () => metrics.processStateText(),
        scrape: () => metrics.scrape(),
      }, this.logger);
      this.status = { address: wanted, server };
      this.logger.info({ url: server.url }, `metrics and health on ${server.url} (/metrics, /healthz, /readyz, /health/ready, /debug/jobs/list, /debug/jobs, /debug/process/state)`);
    } catch (error) {
      metrics.error('status_server_listen');
      this.logger.error({ listenAddress: wanted, err: (error as Error).message }, 'cannot listen for metrics and health; running without them until a reload');
    }
  }
}
