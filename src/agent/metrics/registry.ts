/**
 * The daemon's Prometheus metrics (prom-client), fed through `RunnerObserver`. Loaded only when
 * `listen_address` is set. Labels are bounded: runner names, endpoint method names, HTTP statuses,
 * stages, failure-reason classes, error kinds; never a job id, token or URL.
 */
import type { StageName } from '../../executors/common/stages.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../../metrics/prom.js';
import type { BuildPayload } from '../../protocol/types.js';
import { VERSION } from '../../util/version.js';
import type { Config, RunnerConfig } from '../config/schema.js';
import type { JobOutcome } from '../job/run-job.js';
import { failureReasonClass } from './failure-reason.js';
import { runnerLabel, type Direction, type RunnerObserver } from './observer.js';

/** A running job as /debug/jobs shows it. */
export interface RunningJob {
  id: number;
  runner: string;
  executor: string;
  stage: string;
  started: string;
  traceBytes: number;
}

/** Bounded: a job id is a label of nothing, but the table itself must not grow without end. */
const MAX_TRACKED_JOBS = 10_000;

export class RunnerMetrics implements RunnerObserver {
  readonly registry = new Registry();
  private readonly jobs = new Map<number, RunningJob>();
  private readonly finished: Counter<'runner' | 'state' | 'failure_reason'>;
  private readonly duration: Histogram<'runner' | 'state'>;
  private readonly requests: Counter<'runner' | 'endpoint' | 'status'>;
  private readonly requestDuration: Histogram<'runner' | 'endpoint'>;
  private readonly traceBytes: Counter<'runner'>;
  private readonly traceResyncs: Counter<'runner'>;
  private readonly artifacts: Counter<'runner' | 'direction'>;
  private readonly cache: Counter<'runner' | 'direction'>;
  private readonly errors: Counter<'kind'>;
  private readonly reloads: Counter<'result'>;
  private readonly lastReload: Gauge;

  constructor(config: () => Readonly<Config>) {
    const registers = [this.registry];
    collectProcessMetrics(this.registry);
    const jobs = this.jobs;
    new Gauge({
      name: 'ci_runner_jobs_running',
      help: 'Jobs running now, by runner, stage and executor',
      labelNames: ['runner', 'stage', 'executor'],
      registers,
      collect() {
        this.reset();
        for (const job of jobs.values()) this.inc({ runner: job.runner, stage: job.stage, executor: job.executor });
      },
    });
    this.finished = new Counter({ name: 'ci_runner_jobs_finished_total', help: 'Jobs finished, by runner, state and failure reason class', labelNames: ['runner', 'state', 'failure_reason'], registers });
    this.duration = new Histogram({ name: 'ci_runner_job_duration_seconds', help: 'Job duration from pickup to final update', labelNames: ['runner', 'state'], buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400], registers });
    new Gauge({
      name: 'ci_runner_concurrent',
      help: 'The concurrent setting: most jobs at once across all runners',
      registers,
      collect() {
        this.set(config().concurrent);
      },
    });
    new Gauge({
      name: 'ci_runner_limit',
      help: "Each runner's limit setting (0 = no limit)",
      labelNames: ['runner'],
      registers,
      collect() {
        this.reset();
        for (const runner of config().runners) this.set({ runner: runnerLabel(runner) }, runner.limit);
      },
    });
    this.requests = new Counter({ name: 'ci_runner_api_requests_total', help: 'Coordinator requests, by runner, endpoint and HTTP status (-1: no answer)', labelNames: ['runner', 'endpoint', 'status'], registers });
    this.requestDuration = new Histogram({ name: 'ci_runner_api_request_duration_seconds', help: 'Coordinator request duration (job requests include long polling)', labelNames: ['runner', 'endpoint'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers });
    this.traceBytes = new Counter({ name: 'ci_runner_trace_sent_bytes_total', help: 'Trace bytes the coordinator acknowledged', labelNames: ['runner'], registers });
    this.traceResyncs = new Counter({ name: 'ci_runner_trace_resyncs_total', help: 'Trace appends answered 416 (the sender moved to the server length)', labelNames: ['runner'], registers });
    this.artifacts = new Counter({ name: 'ci_runner_artifact_bytes_total', help: 'Artifact archive bytes uploaded (up) and downloaded (down)', labelNames: ['runner', 'direction'], registers });
    this.cache = new Counter({ name: 'ci_runner_cache_bytes_total', help: 'Cache archive bytes written (up) and read for a restore (down)', labelNames: ['runner', 'direction'], registers });
    this.errors = new Counter({ name: 'ci_runner_errors_total', help: 'Errors, by kind', labelNames: ['kind'], registers });
    this.reloads = new Counter({ name: 'ci_runner_config_reloads_total', help: 'Config reloads, by result (ok, failed)', labelNames: ['result'], registers });
    this.lastReload = new Gauge({ name: 'ci_runner_config_last_reload_timestamp_seconds', help: 'When the config was last reloaded (or tried), Unix time', registers });
    const info = new Gauge({ name: 'ci_runner_version_info', help: 'Version of ci-runner and Node', labelNames: ['version', 'node'], registers });
    info.set({ version: VERSION, node: process.version }, 1);
    for (const result of ['ok', 'failed']) this.reloads.inc({ result }, 0);
  }

  /** The text format for /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  runningJobs(): RunningJob[] {
    return [...this.jobs.values()];
  }

  request(runner: string, endpoint: string, status: number, seconds: number): void {
    this.requests.inc({ runner, endpoint, status: String(status) });
    this.requestDuration.observe({ runner, endpoint }, seconds);
  }

  traceSent(runner: string, jobId: number, bytes: number, end: number): void {
    if (bytes > 0) this.traceBytes.inc({ runner }, bytes);
    const job = this.jobs.get(jobId);
    if (job && end > job.traceBytes) job.traceBytes = end;
  }

  traceResync(runner: string): void {
    this.traceResyncs.inc({ runner });
  }

  artifactBytes(runner: string, direction: Direction, bytes: number): void {
    this.artifacts.inc({ runner, direction }, bytes);
  }

  cacheBytes(runner: string, direction: Direction, bytes: number): void {
    this.cache.inc({ runner, direction }, bytes);
  }

  error(kind: string): void {
    this.errors.inc({ kind });
  }

  jobStarted(runner: RunnerConfig, build: BuildPayload): void {
    if (this.jobs.size >= MAX_TRACKED_JOBS) return;
    this.jobs.set(build.id, { id: build.id, runner: runnerLabel(runner), executor: runner.executor, stage: 'prepare_executor' satisfies StageName, started: new Date().toISOString(), traceBytes: 0 });
  }

  jobStage(build: BuildPayload, stage: string): void {
    const job = this.jobs.get(build.id);
    if (job) job.stage = stage;
  }

  jobFinished(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void {
    const job = this.jobs.get(build.id);
    this.jobs.delete(build.id);
    const name = job?.runner ?? runnerLabel(runner);
    this.finished.inc({ runner: name, state: outcome.state, failure_reason: failureReasonClass(outcome.state, outcome.reason) });
    if (job) this.duration.observe({ runner: name, state: outcome.state }, (Date.now() - Date.parse(job.started)) / 1000);
    if (!outcome.delivered) this.errors.inc({ kind: 'final_update_undelivered' });
  }

  configReloaded(ok: boolean): void {
    this.reloads.inc({ result: ok ? 'ok' : 'failed' });
    this.lastReload.set(Date.now() / 1000);
  }
}
