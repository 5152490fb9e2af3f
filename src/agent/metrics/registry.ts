/**
 * The daemon's Prometheus metrics (prom-client), fed through `RunnerObserver`, under GitLab Runner's
 * names and label names (names.ts, which every series here is created from). Loaded only when
 * `listen_address` is set. Labels are bounded: short tokens, runner names, the system id, endpoint
 * names, HTTP statuses, stages, failure reasons, error kinds; never a job id, a whole token or a URL.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../../metrics/prom.js';
import type { BuildPayload } from '../../protocol/types.js';
import { LOGGED_LEVELS, logLineCounts } from '../../log/level-counts.js';
import { shortToken } from '../../util/short-token.js';
import type { Config, RunnerConfig } from '../config/schema.js';
import type { JobOutcome } from '../job/run-job.js';
import { exportedMetric } from './names.js';
import type { Direction, ProcessState, RunnerObserver, RunnerRef } from './observer.js';
import { executorStage, RunningJobs, type RunningJob } from './running-jobs.js';
import { apiCall, statusClass } from './api-calls.js';
import { versionLabels } from './version-labels.js';

export type { RunningJob };

type Labels = Record<string, string>;
type Collect<T> = (this: T) => void;

export class RunnerMetrics implements RunnerObserver {
  readonly registry = new Registry();
  private readonly jobs = new RunningJobs();
  /** Job requests in flight, by the entry's token. */
  private readonly inFlight = new Map<string, number>();
  private state: ProcessState = 'starting';
  private readonly jobsTotal = this.counter('gitlab_runner_jobs_total');
  private readonly failedJobs = this.counter('gitlab_runner_failed_jobs_total');
  private readonly executionMode = this.counter('gitlab_runner_job_execution_mode_total');
  private readonly duration = this.histogram('gitlab_runner_job_duration_seconds');
  private readonly queueDuration = this.histogram('gitlab_runner_job_queue_duration_seconds');
  private readonly queueSize = this.gauge('gitlab_runner_job_queue_size');
  private readonly queueDepth = this.gauge('gitlab_runner_job_queue_depth');
  private readonly healthFailures = this.counter('gitlab_runner_worker_health_check_failures_total');
  private readonly requests = this.counter('gitlab_runner_api_request_statuses_total');
  private readonly requestDuration = this.histogram('gitlab_runner_api_request_duration_seconds');
  private readonly loaded = this.counter('gitlab_runner_configuration_loaded_total');
  private readonly loadingErrors = this.counter('gitlab_runner_configuration_loading_error_total');
  private readonly saved = this.counter('gitlab_runner_configuration_saved_total');
  private readonly savingErrors = this.counter('gitlab_runner_configuration_saving_error_total');
  private readonly traceBytes = this.counter('ci_runner_trace_sent_bytes_total');
  private readonly traceResyncs = this.counter('ci_runner_trace_resyncs_total');
  private readonly artifacts = this.counter('ci_runner_artifact_bytes_total');
  private readonly cache = this.counter('ci_runner_cache_bytes_total');
  private readonly errors = this.counter('ci_runner_errors_total');
  private readonly lastReload = this.gauge('ci_runner_config_last_reload_timestamp_seconds');

  /** `config` reads the config in force; `systemId` is this host's (`.runner_system_id`). */
  constructor(
    private readonly config: () => Readonly<Config>,
    private readonly systemId = '',
  ) {
    collectProcessMetrics(this.registry);
    this.registerCollected();
    this.gauge('gitlab_runner_version_info').set(versionLabels(), 1);
    this.loaded.inc();
    for (const runner of config().runners) this.jobsTotal.inc(this.labels(runner), 0);
  }

  /** The text format for /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  runningJobs(): RunningJob[] {
    return this.jobs.list();
  }

  /** `/debug/jobs/list` in GitLab Runner's format. */
  runningJobsText(): string {
    return this.jobs.listText();
  }

  /** The process state, as `/debug/process/state` prints it. */
  processStateText(): string {
    return this.state;
  }

  request(runner: RunnerRef, call: string, status: number, seconds: number): void {
    // As GitLab Runner: a request that got no answer has no status to count.
    if (status < 0) return;
    const { endpoint, method } = apiCall(call);
    const base = { runner: shortToken(runner.token), system_id: this.systemId, endpoint, method };
    this.requests.inc({ ...base, status: String(status) });
    this.requestDuration.observe({ ...base, status_class: statusClass(status) }, seconds);
  }

  jobRequest(runner: RunnerRef, phase: 'started' | 'ended', ok?: boolean): void {
    const now = this.inFlight.get(runner.token) ?? 0;
    this.inFlight.set(runner.token, Math.max(0, now + (phase === 'started' ? 1 : -1)));
    if (phase === 'ended' && ok === false) this.healthFailures.inc(this.labels(runner));
    else if (phase === 'ended') this.healthFailures.inc(this.labels(runner), 0);
  }

  traceSent(runner: RunnerRef, jobId: number, bytes: number, end: number): void {
    if (bytes > 0) this.traceBytes.inc(this.labels(runner), bytes);
    const job = this.jobs.get(jobId);
    if (job && end > job.traceBytes) job.traceBytes = end;
  }

  traceResync(runner: RunnerRef): void {
    this.traceResyncs.inc(this.labels(runner));
  }

  artifactBytes(runner: RunnerRef, direction: Direction, bytes: number): void {
    this.artifacts.inc({ ...this.labels(runner), direction }, bytes);
  }

  cacheBytes(build: BuildPayload, direction: Direction, bytes: number): void {
    const job = this.jobs.get(build.id);
    if (job) this.cache.inc({ runner: job.runnerShort, runner_name: job.runner, system_id: this.systemId, direction }, bytes);
  }

  error(kind: string): void {
    this.errors.inc({ kind });
  }

  jobStarted(runner: RunnerConfig, build: BuildPayload): void {
    const labels = this.labels(runner);
    this.jobs.add(runner, build);
    this.jobsTotal.inc(labels);
    this.executionMode.inc({ mode: 'traditional', executor: runner.executor || 'unknown' });
    const queue = build.queue_info;
    if (queue?.time_in_queue_seconds !== undefined) {
      this.queueDuration.observe({ ...labels, project_jobs_running: queue.project_jobs_running ?? '' }, queue.time_in_queue_seconds);
    }
    if (queue?.queue_size !== undefined) this.queueSize.set(labels, queue.queue_size);
    if (queue?.queue_depth !== undefined) this.queueDepth.set(labels, queue.queue_depth);
  }

  jobStage(build: BuildPayload, stage: string): void {
    const job = this.jobs.get(build.id);
    if (job) job.stage = stage;
  }

  jobFinished(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void {
    const job = this.jobs.remove(build.id);
    const labels = this.labels(runner);
    if (outcome.state === 'failed') {
      this.failedJobs.inc({ runner: labels.runner!, runner_name: labels.runner_name!, failure_reason: outcome.failureReason ?? 'script_failure', mode: 'traditional' });
    }
    if (job) this.duration.observe({ ...labels, mode: 'traditional' }, (Date.now() - Date.parse(job.started)) / 1000);
    if (!outcome.delivered) this.errors.inc({ kind: 'final_update_undelivered' });
  }

  configReloaded(ok: boolean): void {
    (ok ? this.loaded : this.loadingErrors).inc();
    this.lastReload.set(Date.now() / 1000);
  }

  configSaved(ok: boolean): void {
    (ok ? this.saved : this.savingErrors).inc();
  }

  processState(state: ProcessState): void {
    this.state = state;
  }

  /** GitLab Runner's labels of an entry: `runner` (short token), `runner_name`, `system_id`. */
  private labels(runner: RunnerRef): Labels {
    return { runner: shortToken(runner.token), runner_name: runner.name, system_id: this.systemId };
  }

  /** The series computed at each scrape from the config and the running jobs. */
  private registerCollected(): void {
    const { config, jobs, inFlight, systemId } = this;
    const labels = (runner: RunnerRef): Labels => this.labels(runner);
    const state = (): ProcessState => this.state;
    this.gauge('gitlab_runner_jobs', function () {
      this.reset();
      for (const runner of config().runners) this.set({ ...labels(runner), state: 'idle', stage: 'idle', executor_stage: 'idle' }, 0);
      for (const job of jobs.list()) {
        this.inc({ runner: job.runnerShort, runner_name: job.runner, system_id: systemId, state: 'running', stage: job.stage, executor_stage: executorStage(job.executor, job.stage) });
      }
    });
    this.gauge('gitlab_runner_concurrent', function () {
      this.set(config().concurrent);
    });
    this.gauge('gitlab_runner_limit', function () {
      this.reset();
      for (const runner of config().runners) this.set(labels(runner), runner.limit);
    });
    const perRunner = (name: string, value: (runner: RunnerConfig) => number): void => {
      this.gauge(name, function () {
        this.reset();
        for (const runner of config().runners) this.set({ runner: shortToken(runner.token), system_id: systemId }, value(runner));
      });
    };
    perRunner('gitlab_runner_request_concurrency', (runner) => inFlight.get(runner.token) ?? 0);
    perRunner('gitlab_runner_request_concurrency_hard_limit', (runner) => Math.max(1, runner.request_concurrency));
    perRunner('gitlab_runner_request_concurrency_used_limit', (runner) => Math.max(1, runner.request_concurrency));
    this.counter('gitlab_runner_request_concurrency_exceeded_total', function () {
      this.reset();
      for (const runner of config().runners) this.inc({ runner: shortToken(runner.token), system_id: systemId }, 0);
    });
    this.gauge('gitlab_runner_process_state_info', function () {
      this.reset();
      this.set({ state: state() }, 1);
    });
    this.counter('gitlab_runner_errors_total', function () {
      this.reset();
      const counts = logLineCounts();
      for (const level of LOGGED_LEVELS) this.inc({ level }, counts[level]);
    });
  }

  private counter(name: string, collect?: Collect<Counter>): Counter {
    const entry = exportedMetric(name);
    return new Counter({ name, help: entry.help, labelNames: [...entry.labels], registers: [this.registry], ...(collect ? { collect } : {}) });
  }

  private gauge(name: string, collect?: Collect<Gauge>): Gauge {
    const entry = exportedMetric(name);
    return new Gauge({ name, help: entry.help, labelNames: [...entry.labels], registers: [this.registry], ...(collect ? { collect } : {}) });
  }

  private histogram(name: string): Histogram {
    const entry = exportedMetric(name);
    return new Histogram({ name, help: entry.help, labelNames: [...entry.labels], registers: [this.registry], ...(entry.buckets ? { buckets: [...entry.buckets] } : {}) });
  }
}
