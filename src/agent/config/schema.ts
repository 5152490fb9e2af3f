/**
 * The config.toml schema: the global keys (GitLab Runner's that apply here, with their meanings,
 * docs/protocol-v1.md §10.11; `check_interval` ≤ 0 means the default) and the `[[runners]]` entries
 * (runner-schema.ts, whose tables have a module each). GLOBAL_KEYS gives every key GitLab Runner 19
 * has at the top level a status (keys.ts): one it does not use is warned about, any key of no table is
 * an error (most likely a misspelling).
 */
import { z } from 'zod';
import { honoured, warned } from '../../util/compat.js';
import { key, keyTable, older, warnedTable } from './keys.js';
import { parseListenAddress } from './listen-address.js';
import { RUNNER_KEYS, runnerSchema } from './runner-schema.js';

export { runnerSchema, runnerValueChecks, type RunnerConfig } from './runner-schema.js';

/** `host:port` for the metrics and health server (`:9252` = every interface). */
const listenAddress = z
  .string()
  .refine((v) => parseListenAddress(v) !== undefined, { error: 'expected "host:port", such as "127.0.0.1:9252" or ":9252" (every interface)' })
  .optional();

/** The whole file: global keys and the runner entries. */
export const configSchema = z.strictObject({
  concurrent: z.int().min(1).default(1),
  /** Seconds; ≤ 0 means the default 3. */
  check_interval: z.number().default(0).transform((v) => (v <= 0 ? 3 : v)),
  log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'panic']).default('info'),
  log_format: z.enum(['runner', 'text', 'json']).default('runner'),
  /** After SIGTERM/SIGINT (jobs aborted), how long the daemon waits for their final updates before it exits 1; 0 means the default 30. */
  shutdown_timeout: z.int().min(0).default(30).transform((v) => (v === 0 ? 30 : v)),
  /** GitLab Runner's: shell jobs run as this user (looked up at start); the daemon stays root. */
  user: z.string().min(1).optional(),
  /** Where /metrics, /healthz, /readyz and /debug/jobs are served; unset = no server. */
  listen_address: listenAddress,
  /** GitLab Runner's older name of `listen_address`. */
  metrics_server: listenAddress,
  runners: z.array(runnerSchema).default([]),
});

export type Config = z.output<typeof configSchema>;

/** The metrics server's address: `listen_address`, else its older name `metrics_server`. */
export function configListenAddress(config: Pick<Config, 'listen_address' | 'metrics_server'>): string | undefined {
  return config.listen_address ?? config.metrics_server;
}

const NOT_YET = 'ci-runner does not apply it yet';
const SESSION_SERVER = 'ci-runner has no interactive web terminal, so no session server';
const MACHINE = 'only the docker+machine executor reads it, and ci-runner has no such executor';
const USAGE_LOGGER = "ci-runner writes no usage log (GitLab Runner's experimental usage logger)";

/** The top level of config.toml: every key of GitLab Runner 19's, and ours. */
export const GLOBAL_KEYS = keyTable(configSchema, {
  listen_address: key(honoured()),
  session_server: key(warned(SESSION_SERVER), warnedTable(SESSION_SERVER, ['listen_address', 'advertise_address', 'session_timeout'])),
  labels: key(warned(NOT_YET)),
  concurrent: key(honoured()),
  check_interval: key(honoured()),
  log_level: key(honoured()),
  log_format: key(honoured()),
  user: key(honoured()),
  runners: key(honoured(), RUNNER_KEYS),
  sentry_dsn: key(warned('ci-runner reports no errors to Sentry')),
  connection_max_age: key(warned(NOT_YET)),
  machine: key(warned(MACHINE), warnedTable(MACHINE, [], { shutdown_drain: warnedTable(MACHINE, ['enabled', 'concurrency', 'max_retries', 'retry_backoff']) })),
  experimental: key(
    warned(USAGE_LOGGER),
    warnedTable(USAGE_LOGGER, [], {
      usage_logger: warnedTable(USAGE_LOGGER, ['enabled', 'writers', 'log_dir', 'max_backup_files', 'max_rotation_age', 'labels'], {
        logrotate: warnedTable(USAGE_LOGGER, ['log_dir', 'max_backup_files', 'max_rotation_age', 'labels']),
        snowplow_billing: warnedTable(USAGE_LOGGER, [
          'collector_uri', 'app_id', 'category', 'realm', 'deployment_type', 'metadata', 'batch_delivery_duration_buckets', 'enable_oidc',
          'skip_oidc_if_unsupported_cloud', 'skip_runner_system_failure',
        ]),
      }),
    }),
  ),
  shutdown_timeout: key(honoured()),
  metrics_server: older(honoured('GitLab Runner 11 and older called listen_address so')),
});
