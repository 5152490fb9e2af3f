/**
 * The metric names of `run`'s /metrics: every series GitLab Runner 19.3 registers (commands/multi.go,
 * commands/builds_helper.go, commands/health_helper.go, commands/internal/configfile/metrics.go,
 * commands/internal/process_state/tracker.go, network/api_requests_collector.go,
 * helpers/prometheus/*, common/version.go, common/spec/inputs_metrics.go, cache/s3v2, router/,
 * executors/docker/machine, executors/kubernetes/autoscaler), with its type and label names, and
 * ci-runner's own series where GitLab Runner has none. The registry (registry.ts) creates each
 * series from this table, and docs/operations.md lists it, so a name can be neither exported under
 * another spelling nor documented wrongly.
 *
 * For a metric, `honoured` means exported with GitLab Runner's name, labels and meaning (`note` says
 * where the values differ in detail); `warned` means not exported, for the `reason` given (what it
 * measures does not exist in ci-runner). No metric is `refused`: a scrape never fails for a name.
 */
import { honoured, warned, type Support } from '../../util/compat.js';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricEntry {
  readonly name: string;
  readonly type: MetricType;
  readonly labels: readonly string[];
  readonly help: string;
  readonly support: Support;
  /** Histogram buckets (GitLab Runner's own, so dashboards' `le` values match). */
  readonly buckets?: readonly number[];
}

/** GitLab Runner's labels for a `[[runners]]` entry: short token, name, system id. */
const RUNNER = ['runner', 'runner_name', 'system_id'] as const;

const NO_WORKER_POOL = 'GitLab Runner feeds a pool of `concurrent` workers from a queue of runners; ci-runner has no such pool (each entry polls with request_concurrency loops, see gitlab_runner_request_concurrency)';
const NO_EXECUTOR = (executor: string): Support => warned(`the ${executor} executor is not available in ci-runner`);

/** Every series GitLab Runner 19.3 registers, by name. */
export const GITLAB_RUNNER_METRICS: readonly MetricEntry[] = [
  { name: 'gitlab_runner_jobs', type: 'gauge', labels: [...RUNNER, 'state', 'stage', 'executor_stage'], help: 'The current number of running builds.', support: honoured('one `idle` series (state, stage and executor_stage `idle`, value 0) per runner entry, as GitLab Runner; `stage` uses GitLab Runner\'s stage names (prepare_executor, get_sources, restore_cache, download_artifacts, step_script, after_script, archive_cache, upload_artifacts_on_success)') },
  { name: 'gitlab_runner_request_concurrency', type: 'gauge', labels: ['runner', 'system_id'], help: 'The current number of concurrent requests for a new job', support: honoured('job requests in flight') },
  { name: 'gitlab_runner_request_concurrency_exceeded_total', type: 'counter', labels: ['runner', 'system_id'], help: 'Count of excess requests above the configured request_concurrency limit', support: honoured('always 0: an entry runs exactly request_concurrency request loops, so no request is ever turned away') },
  { name: 'gitlab_runner_request_concurrency_hard_limit', type: 'gauge', labels: ['runner', 'system_id'], help: 'Configured request_concurrency limit', support: honoured() },
  { name: 'gitlab_runner_request_concurrency_adaptive_limit', type: 'gauge', labels: ['runner', 'system_id'], help: 'Computed adaptive request concurrency limit', support: warned('FF_USE_ADAPTIVE_REQUEST_CONCURRENCY is not implemented: the request concurrency does not adapt') },
  { name: 'gitlab_runner_request_concurrency_used_limit', type: 'gauge', labels: ['runner', 'system_id'], help: 'Used request concurrency limit', support: honoured('equal to the hard limit (no adaptive concurrency)') },
  { name: 'gitlab_runner_jobs_total', type: 'counter', labels: [...RUNNER], help: 'Total number of handled jobs', support: honoured() },
  { name: 'gitlab_runner_job_execution_mode_total', type: 'counter', labels: ['mode', 'executor'], help: 'Total number of jobs grouped by execution mode and executor', support: honoured('mode is always `traditional` (scripts; CI steps are not run)') },
  { name: 'gitlab_runner_job_duration_seconds', type: 'histogram', labels: [...RUNNER, 'mode'], help: 'Histogram of job durations', buckets: [30, 60, 300, 600, 1800, 3600, 7200, 10800, 18000, 36000], support: honoured('from pickup to the final update') },
  { name: 'gitlab_runner_job_queue_duration_seconds', type: 'histogram', labels: [...RUNNER, 'project_jobs_running'], help: 'A histogram representing job queue duration.', buckets: [1, 3, 10, 30, 60, 120, 300, 900, 1800, 3600], support: honoured("from the job's job_info.time_in_queue_seconds and project_jobs_running_on_instance_runners_count (v4; v1 jobs have neither)") },
  { name: 'gitlab_runner_job_queue_size', type: 'gauge', labels: [...RUNNER], help: 'A gauge representing the size of the queue for the runner', support: honoured("job_info.queue_size of the latest job (v4)") },
  { name: 'gitlab_runner_job_queue_depth', type: 'gauge', labels: [...RUNNER], help: 'A gauge representing the search depth in the queue for the runner', support: honoured("job_info.queue_depth of the latest job (v4)") },
  { name: 'gitlab_runner_acceptable_job_queuing_duration_exceeded_total', type: 'counter', labels: [...RUNNER], help: 'Counts how often jobs exceed the configured queuing time threshold', support: warned('[runners.monitoring] job_queuing_durations is not read by ci-runner, so no threshold exists to exceed') },
  { name: 'gitlab_runner_job_stage_duration_seconds', type: 'histogram', labels: [...RUNNER, 'stage'], help: 'Histogram of each job stage duration', buckets: [1, 3, 10, 30, 60, 120, 300, 900, 1800, 3600], support: warned('exported by GitLab Runner only with FF_EXPORT_HIGH_CARDINALITY_METRICS, which ci-runner does not read; not exported') },
  { name: 'gitlab_runner_worker_health_check_failures_total', type: 'counter', labels: [...RUNNER], help: 'Total number of runner worker health check failures', support: honoured('each job request that failed: refused (403), a 5xx or no answer') },
  { name: 'gitlab_runner_worker_feeds_total', type: 'counter', labels: [...RUNNER], help: 'Total number of times that runner worker is fed to the main loop', support: warned(NO_WORKER_POOL) },
  { name: 'gitlab_runner_worker_feed_failures_total', type: 'counter', labels: [...RUNNER], help: 'Total number of times that runner worker feeding have failed', support: warned(NO_WORKER_POOL) },
  { name: 'gitlab_runner_worker_slots_number', type: 'gauge', labels: [], help: 'Current number of runner worker slots', support: warned(NO_WORKER_POOL) },
  { name: 'gitlab_runner_worker_slot_operations_total', type: 'counter', labels: ['operation'], help: 'Total number of runner workers slot operations (starting and stopping slots)', support: warned(NO_WORKER_POOL) },
  { name: 'gitlab_runner_worker_processing_failures_total', type: 'counter', labels: ['failure_type', ...RUNNER], help: 'Total number of failures when processing runner worker', support: warned(NO_WORKER_POOL) },
  { name: 'gitlab_runner_concurrent', type: 'gauge', labels: [], help: 'The current value of concurrent setting', support: honoured() },
  { name: 'gitlab_runner_limit', type: 'gauge', labels: [...RUNNER], help: 'The current value of limit setting', support: honoured() },
  { name: 'gitlab_runner_configuration_loaded_total', type: 'counter', labels: [], help: 'Total number of times the configuration file was loaded by Runner process', support: honoured('the load at start and every reload that applied') },
  { name: 'gitlab_runner_configuration_loading_error_total', type: 'counter', labels: [], help: 'Total number of times the configuration file was not loaded by Runner process due to errors', support: honoured('reloads of a file that could not be used (the old config is kept)') },
  { name: 'gitlab_runner_configuration_saved_total', type: 'counter', labels: [], help: 'Total number of times the configuration file was saved by Runner process', support: honoured('writes of a rotated token') },
  { name: 'gitlab_runner_configuration_saving_error_total', type: 'counter', labels: [], help: 'Total number of times the configuration file was not saved by Runner process due to errors', support: honoured('failed writes of a rotated token') },
  { name: 'gitlab_runner_process_state_info', type: 'gauge', labels: ['state'], help: 'This metric provides info about the current state of the GitLab Runner process', support: honoured('states starting, running, graceful-shutdown (SIGQUIT), forceful-shutdown (SIGTERM/SIGINT)') },
  { name: 'gitlab_runner_job_inputs_interpolations_total', type: 'counter', labels: [], help: 'Total number of job input interpolations where expressions were actually used (output differs from input)', support: warned('job inputs (the payload\'s `inputs`) are not interpolated by ci-runner') },
  { name: 'gitlab_runner_job_inputs_interpolation_failures_total', type: 'counter', labels: ['error_type'], help: 'Total number of failed job input interpolations, labeled by error type', support: warned('job inputs (the payload\'s `inputs`) are not interpolated by ci-runner') },
  { name: 'gitlab_runner_api_request_statuses_total', type: 'counter', labels: ['runner', 'system_id', 'endpoint', 'status', 'method'], help: 'The total number of API requests made by GitLab Runner, partitioned by runner, system_id, endpoint, status and method.', support: honoured('GitLab Runner\'s endpoints request_job, update_job, patch_trace, reset_token; ci-runner also counts the calls GitLab Runner leaves out (upload_artifacts, download_artifacts, register_runner, verify_runner, …) under their own endpoint names; a request with no answer is not counted, as there') },
  { name: 'gitlab_runner_api_request_duration_seconds', type: 'histogram', labels: ['runner', 'system_id', 'endpoint', 'status_class', 'method'], help: 'Latency histogram of API requests made by GitLab Runner, partitioned by runner, system_id, endpoint, status_class and method.', buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], support: honoured('the same requests as gitlab_runner_api_request_statuses_total') },
  { name: 'gitlab_runner_api_request_retries_total', type: 'counter', labels: ['path', 'method'], help: 'The total number of retries made by GitLab Runner in process of completing a request, partitioned by path and method.', support: warned("its `path` label holds URLs with job ids (one series per job); ci-runner's retries show in gitlab_runner_api_request_statuses_total instead") },
  { name: 'gitlab_runner_failed_jobs_total', type: 'counter', labels: ['runner', 'runner_name', 'failure_reason', 'mode'], help: 'Total number of failed jobs', support: honoured("failure_reason is the runner's own reason before it is mapped to what the server accepts (script_failure, runner_system_failure, job_execution_timeout, image_pull_failure, runner_configuration_error, runner_interrupted, job_canceled, …), as GitLab Runner records it") },
  { name: 'gitlab_runner_errors_total', type: 'counter', labels: ['level'], help: 'The number of caught errors.', support: honoured('log lines at warning, error, fatal and panic level (panic stays 0: ci-runner logs fatal instead)') },
  { name: 'gitlab_runner_version_info', type: 'gauge', labels: ['name', 'version', 'revision', 'branch', 'go_version', 'built_at', 'os', 'architecture'], help: "A metric with a constant '1' value labeled by different build stats fields.", support: honoured("name is ci-runner; go_version holds Node's version (ci-runner is not a Go program); os and architecture use Go's names (linux, amd64, arm64)") },
  { name: 'gitlab_runner_job_router_discovery_cache_events_total', type: 'counter', labels: ['result'], help: 'Total number of job router discovery cache lookups, partitioned by result (hit or miss).', support: warned('GitLab\'s job router is not used: ci-runner polls the jobs API directly') },
  { name: 'gitlab_runner_job_router_fallbacks_total', type: 'counter', labels: ['reason'], help: 'Total number of job requests that fell back from the job router to direct GitLab polling, partitioned by reason.', support: warned('GitLab\'s job router is not used: ci-runner polls the jobs API directly') },
  { name: 'gitlab_runner_job_router_get_job_duration_seconds', type: 'histogram', labels: [], help: 'Latency histogram of runner-side job router GetJob requests, regardless of outcome.', support: warned('GitLab\'s job router is not used: ci-runner polls the jobs API directly') },
  { name: 'gitlab_runner_job_router_circuit_breaker_state', type: 'gauge', labels: [], help: 'Circuit breaker state (0 = closed, 1 = open, 2 = half-open).', support: warned('GitLab\'s job router is not used: ci-runner polls the jobs API directly') },
  { name: 'gitlab_runner_job_router_circuit_breaker_trips_total', type: 'counter', labels: [], help: 'Total number of times the circuit breaker has tripped open.', support: warned('GitLab\'s job router is not used: ci-runner polls the jobs API directly') },
  ...[
    ['gitlab_runner_cache_s3_assume_role_requests_in_flight', 'gauge'],
    ['gitlab_runner_cache_s3_assume_role_wait_seconds', 'histogram'],
    ['gitlab_runner_cache_s3_assume_role_duration_seconds', 'histogram'],
    ['gitlab_runner_cache_s3_assume_role_cache_hits_total', 'counter'],
    ['gitlab_runner_cache_s3_assume_role_cache_misses_total', 'counter'],
    ['gitlab_runner_cache_s3_assume_role_cached_credentials', 'gauge'],
    ['gitlab_runner_cache_s3_assume_role_failures_total', 'counter'],
  ].map(([name, type]): MetricEntry => ({ name: name!, type: type as MetricType, labels: [], help: 'S3 cache AssumeRole (AWS STS) activity', support: warned('the S3 cache does not ask AWS STS for role credentials (no AssumeRole)') })),
  ...[
    ['gitlab_runner_autoscaling_actions_total', 'counter', ['action']],
    ['gitlab_runner_autoscaling_machine_states', 'gauge', ['state']],
    ['gitlab_runner_autoscaling_machine_creation_duration_seconds', 'histogram', []],
    ['gitlab_runner_autoscaling_machine_stopping_duration_seconds', 'histogram', []],
    ['gitlab_runner_autoscaling_machine_removal_duration_seconds', 'histogram', []],
    ['gitlab_runner_autoscaling_machine_failed_creation_duration_seconds', 'histogram', []],
  ].map(([name, type, labels]): MetricEntry => ({ name: name as string, type: type as MetricType, labels: labels as string[], help: 'docker+machine autoscaling', support: NO_EXECUTOR('docker+machine') })),
  ...[
    ['gitlab_runner_kubernetes_autoscaler_pause_pods_desired', 'gauge', []],
    ['gitlab_runner_kubernetes_autoscaler_pause_pods_current', 'gauge', []],
    ['gitlab_runner_kubernetes_autoscaler_reconcile_errors_total', 'counter', ['reason']],
    ['gitlab_runner_kubernetes_autoscaler_scale_operations_total', 'counter', ['direction']],
  ].map(([name, type, labels]): MetricEntry => ({ name: name as string, type: type as MetricType, labels: [...RUNNER, ...(labels as string[])], help: 'Kubernetes pause-pod autoscaler', support: warned('the kubernetes executor has no pause-pod autoscaler in ci-runner') })),
];

/**
 * ci-runner's own series, kept where GitLab Runner has none. The process metrics (`process_*`) come
 * from prom-client under the same names as GitLab Runner's Go process collector; Go's runtime metrics
 * (`go_*`) have Node's (`nodejs_*`) in their place.
 */
export const OWN_METRICS: readonly MetricEntry[] = [
  { name: 'ci_runner_trace_sent_bytes_total', type: 'counter', labels: [...RUNNER], help: 'Trace bytes the coordinator acknowledged', support: honoured() },
  { name: 'ci_runner_trace_resyncs_total', type: 'counter', labels: [...RUNNER], help: 'Trace appends answered 416 (the sender moved to the server length)', support: honoured() },
  { name: 'ci_runner_artifact_bytes_total', type: 'counter', labels: [...RUNNER, 'direction'], help: 'Artifact archive bytes uploaded (up) and downloaded (down)', support: honoured() },
  { name: 'ci_runner_cache_bytes_total', type: 'counter', labels: [...RUNNER, 'direction'], help: 'Cache archive bytes written (up) and read for a restore (down)', support: honoured() },
  { name: 'ci_runner_errors_total', type: 'counter', labels: ['kind'], help: 'Errors, by kind (transport, coordinator_5xx, runner_forbidden, invalid_build, final_update_undelivered, token_reset_failed, status_server_listen)', support: honoured() },
  { name: 'ci_runner_config_last_reload_timestamp_seconds', type: 'gauge', labels: [], help: 'When the config was last reloaded (or tried), Unix time', support: honoured() },
];

/** Names ci-runner used before it took GitLab Runner's, and what replaced each (docs/operations.md). */
export const RENAMED_METRICS: Readonly<Record<string, string>> = {
  ci_runner_jobs_running: 'gitlab_runner_jobs',
  ci_runner_jobs_finished_total: 'gitlab_runner_jobs_total and gitlab_runner_failed_jobs_total',
  ci_runner_job_duration_seconds: 'gitlab_runner_job_duration_seconds',
  ci_runner_concurrent: 'gitlab_runner_concurrent',
  ci_runner_limit: 'gitlab_runner_limit',
  ci_runner_api_requests_total: 'gitlab_runner_api_request_statuses_total',
  ci_runner_api_request_duration_seconds: 'gitlab_runner_api_request_duration_seconds',
  ci_runner_config_reloads_total: 'gitlab_runner_configuration_loaded_total and gitlab_runner_configuration_loading_error_total',
  ci_runner_version_info: 'gitlab_runner_version_info',
};

/** The entry of an exported series (throws for a name not in the tables, or one not exported: a programming error). */
export function exportedMetric(name: string): MetricEntry {
  const entry = [...GITLAB_RUNNER_METRICS, ...OWN_METRICS].find((m) => m.name === name);
  if (!entry || entry.support.status !== 'honoured') throw new Error(`metric ${name} is not an exported metric of metrics/names.ts`);
  return entry;
}
