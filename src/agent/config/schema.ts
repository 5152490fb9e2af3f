/**
 * The config.toml schema: the global keys (GitLab Runner's that apply here, with their meanings,
 * docs/protocol-v1.md §10.11; `check_interval` ≤ 0 means the default) and the `[[runners]]` entries
 * (runner-schema.ts, whose tables have a module each). Keys GitLab Runner knows but we do not use are
 * listed separately: they produce a warning, while any other unknown key is an error (most likely a
 * misspelling of one of ours).
 */
import { z } from 'zod';
import { parseListenAddress } from './listen-address.js';
import { runnerSchema } from './runner-schema.js';

export { IGNORED_RUNNER_KEYS, KNOWN_RUNNER_KEYS, REGISTRATION_RECORD_KEYS, RUNNER_SECTIONS, runnerSchema, runnerValueChecks, type RunnerConfig } from './runner-schema.js';

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
  /** Seconds running jobs get to finish after SIGTERM before they are cancelled; 0 means the default 30. */
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

/** GitLab Runner global keys with no effect here: a warning names them. */
export const IGNORED_GLOBAL_KEYS = new Set([
  'sentry_dsn', 'session_server', 'connection_max_age',
  'prometheus_address', 'shutdown_timeout_kill',
]);

/** Every global key this runner reads, for "did you mean" suggestions. */
export const KNOWN_GLOBAL_KEYS = Object.keys(configSchema.shape);
