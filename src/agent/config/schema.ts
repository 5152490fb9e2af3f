/**
 * The config.toml schema: the GitLab Runner keys that apply here, with their meanings (PROTOCOL.md
 * §10.11; `check_interval` ≤ 0 means the default, `output_limit` is KiB), plus this runner's own keys.
 * GitLab Runner writes zero values for keys left unset (`shutdown_timeout = 0`, `request_concurrency
 * = 0`): where it reads a zero as its default, so does this schema.
 * Keys GitLab Runner knows but we do not use are listed separately: they produce a warning, while any
 * other unknown key is an error (most likely a misspelling of one of ours).
 */
import { resolve } from 'node:path';
import { z } from '../../schema/index.js';
import { parseSizeBytes } from '../../size.js';
import { dockerSchema } from './docker-schema.js';
import { kubernetesTable } from './kubernetes-schema.js';
import { parseListenAddress } from '../metrics/address.js';

const positiveInt = z.int().min(1);
const nonNegativeInt = z.int().min(0);

/**
 * A byte size with a unit ("500MB", "10GiB"; MB = MiB), or 0 for none: the number of bytes, 0 when
 * unset. A bare number other than 0 is refused: 1024 could mean bytes or megabytes.
 */
const byteSize = z.unknown().optional().transform((value, ctx) => {
  if (value === undefined || value === 0 || value === '0') return 0;
  const bytes = typeof value === 'string' ? parseSizeBytes(value) : undefined;
  if (bytes !== undefined) return bytes;
  ctx.issues.push({ code: 'custom', input: value, message: `expected a size with a unit, such as "500MB" or "10GiB" (units are powers of 1024), or 0 for no limit; got ${JSON.stringify(value)}` });
  return z.NEVER;
});

/** `[runners.cache]`: accepted now, given meaning by a later issue. */
const looseTable = z.record(z.string(), z.unknown());

/** One `[[runners]]` entry. */
export const runnerSchema = z.strictObject({
  name: z.string().min(1).default('ci-runner'),
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  token: z.string().min(1, 'the runner token from `register`'),
  /** GitLab Runner's: PEM CA bundle trusted for the coordinator, on top of the system's. */
  'tls-ca-file': z.string().min(1).optional(),
  /** GitLab Runner's: client certificate (PEM) for a coordinator that asks for one; with `tls-key-file`. */
  'tls-cert-file': z.string().min(1).optional(),
  'tls-key-file': z.string().min(1).optional(),
  executor: z.enum(['shell', 'docker', 'kubernetes']).default('shell'),
  shell: z.enum(['bash', 'sh']).default('bash'),
  /** Shell executor default: `<daemon cwd>/builds` (§9.4); relative paths resolve against the cwd. */
  builds_dir: z.string().min(1).default('builds').transform((p) => resolve(p)),
  cache_dir: z.string().min(1).default('cache').transform((p) => resolve(p)),
  environment: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*=/, 'a "NAME=value" string')).default([]),
  /** Max jobs of this entry at once; 0 = no limit. */
  limit: nonNegativeInt.default(0),
  /** Trace cap in KiB; 0 = the default 4096. */
  output_limit: nonNegativeInt.default(0).transform((v) => (v === 0 ? 4096 : v)),
  /** ≤ 0 means the default, 1 (GitLab Runner's `max(1, n)`). */
  request_concurrency: z.int().default(1).transform((v) => Math.max(1, v)),
  pre_clone_script: z.string().optional(),
  pre_build_script: z.string().optional(),
  post_build_script: z.string().optional(),
  /** Ours: seconds between trace sends. */
  trace_update_interval: z.number().positive().max(3600).default(1),
  /** Ours: seconds of silence before an empty PATCH doubles as a keep-alive/cancel probe. */
  trace_keepalive_interval: z.number().positive().max(3600).default(5),
  /** Ours: archive format of uploaded artifacts. */
  artifacts_format: z.enum(['tar.gz', 'zip']).default('tar.gz'),
  /** Ours: most bytes one job may extract from downloaded artifacts and its cache; 0 = no limit. */
  artifacts_extract_limit: byteSize,
  /** Ours: seconds between SIGTERM and SIGKILL when a job is cancelled or times out. */
  kill_grace_period: z.number().min(0).max(300).default(3),
  /** Always present: `executor = "docker"` without the table gets the defaults. */
  docker: dockerSchema.prefault({}),
  /** Always present, as `docker`; validated by zod (kubernetes-schema.ts). */
  kubernetes: z.unknown().optional().transform(kubernetesTable),
  cache: looseTable.optional(),
});

/** `host:port` for the metrics and health server (`:9252` = every interface). */
const listenAddress = z
  .string()
  .refine((v) => parseListenAddress(v) !== undefined, { error: 'expected "host:port", such as "127.0.0.1:9252" or ":9252" (every interface)' })
  .optional();

/** The whole file: global keys and the runner entries. */
export const configSchema = z.strictObject({
  concurrent: positiveInt.default(1),
  /** Seconds; ≤ 0 means the default 3. */
  check_interval: z.number().default(0).transform((v) => (v <= 0 ? 3 : v)),
  log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'panic']).default('info'),
  log_format: z.enum(['runner', 'text', 'json']).default('runner'),
  /** Seconds running jobs get to finish after SIGTERM before they are cancelled; 0 means the default 30. */
  shutdown_timeout: nonNegativeInt.default(30).transform((v) => (v === 0 ? 30 : v)),
  /** GitLab Runner's: shell jobs run as this user (looked up at start); the daemon stays root. */
  user: z.string().min(1).optional(),
  /** Where /metrics, /healthz, /readyz and /debug/jobs are served; unset = no server. */
  listen_address: listenAddress,
  /** GitLab Runner's older name of `listen_address`. */
  metrics_server: listenAddress,
  runners: z.array(runnerSchema).default([]),
});

export type RunnerConfig = z.output<typeof runnerSchema>;
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

/** GitLab Runner `[[runners]]` keys and tables with no effect here. */
export const IGNORED_RUNNER_KEYS = new Set([
  'id', 'token_obtained_at', 'token_expires_at', 'clone_url', 'debug_trace_disabled', 'referees',
  'unhealthy_requests_limit', 'unhealthy_interval', 'custom_build_dir',
  'ssh', 'parallels', 'virtualbox', 'custom', 'machine', 'autoscaler', 'feature_flags',
  'pre_get_sources_script', 'post_get_sources_script', 'executor_url', 'disable_verbose', 'tls-skip-verify',
  'environment_variables', 'shell_options', 'graceful_kill_timeout', 'force_kill_timeout',
]);

/**
 * What GitLab Runner's `register` records about the registration, not settings: ignored without a
 * warning, so a config.toml it wrote loads quietly.
 */
export const REGISTRATION_RECORD_KEYS = new Set(['id', 'token_obtained_at', 'token_expires_at']);

/** Every key this runner reads, for "did you mean" suggestions. */
export const KNOWN_GLOBAL_KEYS = Object.keys(configSchema.shape);
export const KNOWN_RUNNER_KEYS = Object.keys(runnerSchema.shape);
