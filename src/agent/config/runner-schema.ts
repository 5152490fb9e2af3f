/**
 * One `[[runners]]` entry: GitLab Runner's keys that apply here, with their meanings (docs/protocol-v1.md
 * §10.11; `output_limit` is KiB), this runner's own keys, and the tables inside an entry, one module
 * each (RUNNER_SECTIONS). GitLab Runner writes zero values for keys left unset (`request_concurrency
 * = 0`): where it reads a zero as its default, so does this schema.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { parseSizeBytes } from '../../util/size.js';
import { cacheSection } from './cache-schema.js';
import { dockerSection } from './docker-schema.js';
import { kubernetesSection } from './kubernetes-schema.js';
import { sectionsShape } from './section.js';

/** The tables of an entry, each in its own module; a new one is added here. */
export const RUNNER_SECTIONS = [dockerSection, kubernetesSection, cacheSection] as const;

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

export const runnerSchema = z.strictObject({
  name: z.string().min(1).default('ci-runner'),
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  token: z.string().min(1, 'the runner token from `register`'),
  /**
   * Ours: the runner API at `url`: `v4` (`/api/v4`, GitLab 9.0 and later), `v1` (`/ci/api/v1`,
   * GitLab 8.x), or `auto` (the default: the server is asked which it serves).
   */
  api: z.enum(['auto', 'v4', 'v1'], { error: '"v4", "v1" or "auto"' }).default('auto'),
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
  /** Ours: seconds of silence before a keep-alive (v1 an empty PATCH, v4 a `running` PUT) doubles as the cancel probe; the server's interval wins. */
  trace_keepalive_interval: z.number().positive().max(3600).default(5),
  /** Ours: archive format of uploaded artifacts. */
  artifacts_format: z.enum(['tar.gz', 'zip']).default('tar.gz'),
  /** Ours: most bytes one job may extract from downloaded artifacts and its cache; 0 = no limit. */
  artifacts_extract_limit: byteSize,
  /** Ours: seconds between SIGTERM and SIGKILL when a job is cancelled or times out. */
  kill_grace_period: z.number().min(0).max(300).default(3),
  /** `[runners.feature_flags]`: GitLab Runner's flags by name (agent/job/feature-flags.ts); they win over a job's. */
  feature_flags: z.record(z.string(), z.boolean()).default({}),
  ...sectionsShape(RUNNER_SECTIONS),
});

export type RunnerConfig = z.output<typeof runnerSchema>;

/** GitLab Runner `[[runners]]` keys and tables with no effect here (a table of RUNNER_SECTIONS is read, whatever this says). */
export const IGNORED_RUNNER_KEYS = new Set([
  'id', 'token_obtained_at', 'token_expires_at', 'clone_url', 'debug_trace_disabled', 'referees',
  'unhealthy_requests_limit', 'unhealthy_interval', 'custom_build_dir',
  'ssh', 'parallels', 'virtualbox', 'kubernetes', 'custom', 'machine', 'autoscaler',
  'pre_get_sources_script', 'post_get_sources_script', 'executor_url', 'disable_verbose', 'tls-skip-verify',
  'environment_variables', 'shell_options', 'graceful_kill_timeout', 'force_kill_timeout',
]);

/**
 * What GitLab Runner's `register` records about the registration, not settings: ignored without a
 * warning, so a config.toml it wrote loads quietly.
 */
export const REGISTRATION_RECORD_KEYS = new Set(['id', 'token_obtained_at', 'token_expires_at']);

/** Every key of an entry this runner reads, for "did you mean" suggestions. */
export const KNOWN_RUNNER_KEYS = Object.keys(runnerSchema.shape);
