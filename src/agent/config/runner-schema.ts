/**
 * One `[[runners]]` entry: GitLab Runner's keys that apply here, with their meanings (docs/protocol-v1.md
 * §10.11; `output_limit` is KiB), this runner's own keys, and the tables inside an entry, one module
 * each. GitLab Runner writes zero values for keys left unset (`request_concurrency = 0`): where it reads
 * a zero as its default, so does this schema. RUNNER_KEYS gives every key of GitLab Runner 19's entry
 * a status (keys.ts); EXECUTORS does the same for the values of `executor`.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { honoured, refused, warned, type Support } from '../../util/compat.js';
import { parseSizeBytes } from '../../util/size.js';
import { CACHE_KEYS, cacheSection } from './cache-schema.js';
import { CUSTOM_KEYS, customSection } from './custom-schema.js';
import { DOCKER_KEYS, dockerSection } from './docker-schema.js';
import { goDuration } from './durations.js';
import { key, keyTable, older, ours, type KeyEntry } from './keys.js';
import { KUBERNETES_KEYS, kubernetesSection } from './kubernetes-schema.js';
import { OTHER_EXECUTOR_TABLES } from './other-executors-schema.js';
import { RUNNER_TABLES } from './runner-tables-schema.js';

/** The executors ci-runner has. */
export const OUR_EXECUTORS = ['shell', 'docker', 'kubernetes', 'custom'] as const;

const noSuchExecutor = (name: string) => refused(`ci-runner does not have GitLab Runner's ${name} executor`);

/** Every value of GitLab Runner 19's `executor`: ours are honoured, an entry of any other is refused. */
export const EXECUTORS: Readonly<Record<string, Support>> = {
  ...Object.fromEntries(OUR_EXECUTORS.map((name) => [name, honoured()])),
  ssh: noSuchExecutor('ssh'),
  parallels: noSuchExecutor('parallels'),
  virtualbox: noSuchExecutor('virtualbox'),
  'docker+machine': noSuchExecutor('docker+machine'),
  'docker-autoscaler': noSuchExecutor('docker-autoscaler'),
  instance: noSuchExecutor('instance'),
  'docker-windows': refused("ci-runner runs Linux containers only; it does not have GitLab Runner's docker-windows executor"),
};

/** GitLab Runner 19's shells; ci-runner writes scripts for bash and sh. */
const OUR_SHELLS = ['bash', 'sh'] as const;

/** Every value of GitLab Runner 19's `shell`: ours are honoured, PowerShell refused. */
export const SHELLS: Readonly<Record<string, Support>> = {
  ...Object.fromEntries(OUR_SHELLS.map((name) => [name, honoured()])),
  pwsh: refused('ci-runner writes job scripts for bash and sh only, not PowerShell'),
  powershell: refused('ci-runner writes job scripts for bash and sh only, not PowerShell (and runs no Windows jobs)'),
};

/** Why `shell` cannot be `input`. */
function shellProblem(input: unknown): string {
  const support = typeof input === 'string' && Object.hasOwn(SHELLS, input) ? SHELLS[input] : undefined;
  if (support?.status === 'refused') return `"${String(input)}" is refused: ${support.reason}`;
  return `expected one of ${OUR_SHELLS.join(', ')}`;
}

/**
 * GitLab Runner's label rules (its common/labels.go, kept in step with GitLab's): at most 32 per
 * runner once the global ones are merged in (load.ts checks that).
 */
export const labelsSchema = z
  .record(
    z.string().regex(/^[a-zA-Z0-9_][a-zA-Z0-9._-]{2,64}$/, 'a label name of 3 to 65 letters, digits, ".", "_" or "-" (not starting with "." or "-")'),
    z.string().regex(/^[a-zA-Z0-9._-]{1,256}$/, 'a label value of 1 to 256 letters, digits, ".", "_" or "-"'),
  )
  .default({});

/** A stage's timeout: unset or 0 means the job's (GitLab Runner warns about a negative one, as we do at the job). */
const stageTimeout = goDuration.optional();

/** `[runners.artifact]`: artifact transfer limits in seconds (GitLab Runner's defaults: 1 h and 10 min). */
const artifactTable = z.strictObject({
  upload_timeout: goDuration.default(3600),
  response_header_timeout: goDuration.default(600),
});

/** Why `executor` cannot be `input`: its refusal, or the list of what it can be. */
function executorProblem(input: unknown): string {
  const have = `ci-runner's executors are ${OUR_EXECUTORS.join(', ')}`;
  const support = typeof input === 'string' && Object.hasOwn(EXECUTORS, input) ? EXECUTORS[input] : undefined;
  if (support?.status === 'refused') return `"${String(input)}" is refused: ${support.reason}; ${have}`;
  return `not an executor of GitLab Runner 19 that ci-runner has; ${have}`;
}

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

/**
 * A TOML date-time GitLab Runner wrote (`token_obtained_at = 2026-04-20T13:10:41Z`); its zero value
 * `0001-01-01T00:00:00Z`, written for "none", reads as unset.
 */
const tokenTime = z
  .unknown()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value === '') return undefined;
    const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
    if (!date || Number.isNaN(date.getTime())) {
      ctx.issues.push({ code: 'custom', input: value, message: 'expected a date-time such as 2026-04-20T13:10:41Z' });
      return z.NEVER;
    }
    return date.getUTCFullYear() <= 1 ? undefined : new Date(date.getTime());
  });
/** `[runners.custom_build_dir]` (GIT_CLONE_PATH, agent/job/project-dir.ts). */
const customBuildDirSchema = z.strictObject({ enabled: z.boolean().optional() });

export const runnerSchema = z.strictObject({
  name: z.string().min(1).default('ci-runner'),
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  token: z.string().min(1, 'the runner token from `register`'),
  /** GitLab Runner's: the runner's id on the server, as `register` recorded it (`reset-token --id`). */
  id: z.int().min(0).optional(),
  /** GitLab Runner's: when the token was obtained and when it expires; the daemon renews it at 3/4 of that span. */
  token_obtained_at: tokenTime,
  token_expires_at: tokenTime,
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
  executor: z.enum(OUR_EXECUTORS, { error: (issue) => executorProblem(issue.input) }).default('shell'),
  shell: z
    .preprocess((v) => (v === '' ? undefined : v), z.enum(OUR_SHELLS, { error: (issue) => shellProblem(issue.input) }).optional())
    .transform((v) => v ?? 'bash'),
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
  /** No immediate job request after receiving a job: always wait check_interval. */
  strict_check_interval: z.boolean().default(false),
  /** Unhealthy job requests in a row before the pause (< 1: GitLab Runner's default 3). */
  unhealthy_requests_limit: z.int().default(0).transform((v) => (v < 1 ? 3 : v)),
  /** Seconds the entry pauses once unhealthy (default 60 min). */
  unhealthy_interval: goDuration.default(3600).transform((v) => Math.max(0, v)),
  /** Failed tries of a job's final update before giving up (< 1: GitLab Runner's default 10). */
  job_status_final_update_retry_limit: z.int().default(0).transform((v) => (v < 1 ? 10 : v)),
  /** Labels sent to GitLab in the runner's `info` (the global `labels` merged under them by configSchema). */
  labels: labelsSchema,
  /** Seconds; unset: the job's timeout. */
  prepare_timeout: stageTimeout,
  get_sources_timeout: stageTimeout,
  /** CI_DEBUG_TRACE (and CI_DEBUG_SERVICES) are refused, with a warning in the job log. */
  debug_trace_disabled: z.boolean().default(false),
  artifact: artifactTable.prefault({}),
  /** GitLab Runner's: commands run (where get_sources runs) before the clone or fetch; after, with `post_`. */
  pre_get_sources_script: z.string().optional(),
  post_get_sources_script: z.string().optional(),
  /** GitLab Runner's name of `pre_get_sources_script` before 17.0: run as it (with a warning, runnerValueChecks). */
  pre_clone_script: z.string().optional(),
  /** GitLab Runner's: the base URL to fetch sources from instead of the payload's repository URL. */
  clone_url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }).optional(),
  /** GitLab Runner's: the checkout's git config is always rebuilt here; `false` gets a warning (runnerValueChecks). */
  clean_git_config: z.boolean().optional(),
  /** GitLab Runner's: `safe.directory` for the checkout (default: on, except for the shell executor). */
  safe_directory_checkout: z.boolean().optional(),
  /** GitLab Runner's: jobs may choose their project dir with GIT_CLONE_PATH (default: on for docker and kubernetes, off for shell). */
  custom_build_dir: customBuildDirSchema.prefault({}),
  pre_build_script: z.string().optional(),
  post_build_script: z.string().optional(),
  /** GitLab Runner's feature flags set for this entry (`FF_…` = true/false); what each does is the job's business. */
  feature_flags: z.record(z.string().min(1), z.boolean()).default({}),
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
  docker: dockerSection,
  kubernetes: kubernetesSection,
  custom: customSection,
  cache: cacheSection,
});

export type RunnerConfig = z.output<typeof runnerSchema>;

const CUSTOM_BUILD_DIR_KEYS = keyTable(customBuildDirSchema, { enabled: key(honoured()) });

/** What an entry's values (not its keys) deserve: problems refuse the file, warnings are said once at load. */
export function runnerValueChecks(runner: RunnerConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  if (runner.pre_clone_script !== undefined && runner.pre_get_sources_script !== undefined) {
    problems.push('`pre_clone_script`: set pre_get_sources_script only (pre_clone_script is its name before GitLab Runner 17.0)');
  }
  const warnings: string[] = [];
  if (runner.pre_clone_script !== undefined) warnings.push('`pre_clone_script` is GitLab Runner\'s name before 17.0 of `pre_get_sources_script` (GitLab Runner 17 and later ignore it): it runs as `pre_get_sources_script`; rename it');
  if (runner.clean_git_config === false) warnings.push('`clean_git_config = false` is ignored: the runner always rebuilds the checkout\'s git config before its own git runs there (docs/jobs.md, "Getting the sources")');
  return { problems, warnings };
}


/** A table of an executor ci-runner does not have. */
const otherExecutor = (name: keyof typeof OTHER_EXECUTOR_TABLES): KeyEntry => key(warned(OTHER_EXECUTOR_TABLES[name].reason), OTHER_EXECUTOR_TABLES[name].table);

/** `[[runners]]`: every key of GitLab Runner 19's entry, and ours. */
export const RUNNER_KEYS = keyTable(runnerSchema, {
  name: key(honoured()),
  url: key(honoured()),
  id: key(honoured('a record of the runner\'s id on the server, written by `register`')),
  token: key(honoured()),
  token_obtained_at: key(honoured('with token_expires_at, the daemon renews the token at 3/4 of its life (agent/token-rotation.ts)')),
  token_expires_at: key(honoured('the daemon renews the token before it (agent/token-rotation.ts); 0001-01-01T00:00:00Z: never expires')),
  'tls-ca-file': key(honoured()),
  'tls-cert-file': key(honoured()),
  'tls-key-file': key(honoured()),
  limit: key(honoured()),
  output_limit: key(honoured()),
  request_concurrency: key(honoured()),
  strict_check_interval: key(honoured()),
  unhealthy_requests_limit: key(honoured()),
  unhealthy_interval: key(honoured()),
  job_status_final_update_retry_limit: key(honoured()),
  labels: key(honoured('sent to GitLab in the runner\'s info (v4), merged over the global labels')),
  executor: key(honoured('the values ci-runner has; any other of GitLab Runner\'s is refused (EXECUTORS)')),
  builds_dir: key(honoured()),
  cache_dir: key(honoured()),
  clone_url: key(honoured('get_sources fetches from it joined with CI_PROJECT_PATH (docs/jobs.md)')),
  environment: key(honoured()),
  proxy_exec: key(warned('ci-runner runs job scripts itself; it has no helper binary to proxy them through')),
  pre_get_sources_script: key(honoured('runs where get_sources runs: on the host for docker and kubernetes too (docs/jobs.md)')),
  post_get_sources_script: key(honoured('runs where get_sources runs: on the host for docker and kubernetes too (docs/jobs.md)')),
  pre_build_script: key(honoured()),
  post_build_script: key(honoured()),
  prepare_timeout: key(honoured()),
  get_sources_timeout: key(honoured()),
  debug_trace_disabled: key(honoured()),
  safe_directory_checkout: key(honoured('`safe.directory` for the runner\'s git in the checkout; default on, except for the shell executor')),
  clean_git_config: key(honoured('the checkout\'s git config is always rebuilt before the runner\'s git runs there: `false` is ignored, with a warning')),
  shell: key(honoured('bash and sh; PowerShell is refused (SHELLS)')),
  custom_build_dir: key(honoured(), CUSTOM_BUILD_DIR_KEYS),
  referees: key(warned(RUNNER_TABLES.referees.reason), RUNNER_TABLES.referees.table),
  cache: key(honoured('local, or in S3, Azure or GCS as GitLab Runner stores it (docs/cache-and-artifacts.md)'), CACHE_KEYS),
  artifact: key(honoured(), keyTable(artifactTable, { upload_timeout: key(honoured()), response_header_timeout: key(honoured()) })),
  feature_flags: key(honoured('each flag as the feature flag table of the job says')),
  monitoring: key(warned(RUNNER_TABLES.monitoring.reason), RUNNER_TABLES.monitoring.table),
  use_slot_cgroups: key(warned(RUNNER_TABLES.slotCgroups)),
  slot_cgroup_template: key(warned(RUNNER_TABLES.slotCgroups)),
  instance: otherExecutor('instance'),
  ssh: otherExecutor('ssh'),
  docker: key(honoured(), DOCKER_KEYS),
  parallels: otherExecutor('parallels'),
  virtualbox: otherExecutor('virtualbox'),
  machine: otherExecutor('machine'),
  kubernetes: key(honoured(), KUBERNETES_KEYS),
  custom: key(honoured('the custom executor\'s driver programs (docs/executors/custom.md)'), CUSTOM_KEYS),
  autoscaler: otherExecutor('autoscaler'),
  step_runner_image: key(warned('ci-runner does not run CI steps (`run:`), so it puts no step-runner into the build container')),
  experimental: key(warned(RUNNER_TABLES.experimental.reason), RUNNER_TABLES.experimental.table),
  pre_clone_script: older(honoured('GitLab Runner 17 removed it for pre_get_sources_script: read as that, with a warning (GitLab Runner 19 ignores it); both set is refused')),
  'tls-skip-verify': older(warned('GitLab Runner 1.11 documented it without implementing it, and later versions dropped it')),
  disable_verbose: older(warned('GitLab Runner 1.11 documented it without implementing it, and later versions dropped it')),
  api: ours(honoured('which runner API the entry speaks: v4, v1 or auto')),
  trace_update_interval: ours(honoured()),
  trace_keepalive_interval: ours(honoured()),
  artifacts_format: ours(honoured()),
  artifacts_extract_limit: ours(honoured()),
  kill_grace_period: ours(honoured()),
});
