/**
 * GitLab Runner 19.3's feature flags (helpers/featureflags/flags.go), as one table: each with its default
 * and what ci-runner does with it. A flag is resolved per job as GitLab Runner resolves it: its default,
 * unless `[runners.feature_flags]` names it (the runner's setting wins), else the job's variables (the
 * runner's `environment` and the payload's, the last definition winning, expanded) when they hold a
 * value `strconv.ParseBool` accepts. Every flag is then given to the job as a variable, resolved (so a
 * script sees what the runner does). A flag ci-runner does not honour draws one warning, with the reason,
 * where it is set to other than its default: in the job log for a job's variable, at load for the config.
 */
import { expandString } from '../../util/expand.js';
import { parseGoBool } from '../../util/go-bool.js';

export { parseGoBool };
import { honoured, warned, type Support } from '../../util/compat.js';

export interface FeatureFlag {
  readonly name: string;
  readonly default: boolean;
  readonly support: Support;
  /**
   * For a flag not honoured: the value whose behaviour ci-runner has anyway, when one has it. Set to
   * the other value (or, without one, to other than its default), the flag draws its warning.
   */
  readonly ours?: boolean;
}

const windowsOnly = warned('it changes how GitLab Runner starts processes on Windows; ci-runner runs on Linux');
const noPowerShell = warned('it is about PowerShell scripts; ci-runner writes bash/sh scripts');
const noStepRunner = warned('it is about GitLab\'s step-runner, which ci-runner does not use (CI steps, `run:`, are refused with their reason)');
const noSecrets = warned('ci-runner resolves no external secrets (it does not announce vault_secrets)');
const noAutoscaler = warned('it is about GitLab Runner\'s autoscaler (fleeting), which ci-runner does not have');
const ownArchives = warned('ci-runner makes and reads archives with its own archivers and transfers them in one stream');

const flag = (name: string, byDefault: boolean, support: Support, ours?: boolean): FeatureFlag => ({ name, default: byDefault, support, ...(ours === undefined ? {} : { ours }) });

/** Every flag of GitLab Runner 19.3, in its order. */
export const FEATURE_FLAGS: readonly FeatureFlag[] = [
  flag('FF_TEST_FEATURE', false, warned('GitLab Runner uses it in its own tests only')),
  flag('FF_NETWORK_PER_BUILD', false, warned('the docker executor puts a job with services on a network of its own either way, and sets no CI_BUILD_NETWORK_NAME')),
  flag('FF_USE_LEGACY_KUBERNETES_EXECUTION_STRATEGY', false, warned('the kubernetes executor runs each stage with one exec of its own'), true),
  flag('FF_USE_DIRECT_DOWNLOAD', true, warned('artifact downloads over API v4 always ask for object storage\'s direct URL'), true),
  flag('FF_USE_FASTZIP', false, ownArchives, false),
  flag('FF_DISABLE_UMASK_FOR_DOCKER_EXECUTOR', false, warned('the docker executor always runs the script as the image\'s user and hands the files back afterwards'), true),
  flag('FF_ENABLE_BASH_EXIT_CODE_CHECK', false, warned('the scripts stop at the first failing command through `set -e` alone'), false),
  flag('FF_USE_WINDOWS_LEGACY_PROCESS_STRATEGY', false, windowsOnly),
  flag('FF_USE_LEGACY_BASH_EVAL', false, warned('ci-runner runs each stage\'s script from a file, not through eval')),
  flag('FF_USE_POWERSHELL_PATH_RESOLVER', false, noPowerShell),
  flag('FF_USE_DYNAMIC_TRACE_FORCE_SEND_INTERVAL', false, warned('the job log is sent at ci-runner\'s own pace (trace_update_interval and the server\'s interval)'), false),
  flag('FF_SCRIPT_SECTIONS', false, honoured('a multi-line command is a collapsed section of its own, when the server asks for sections')),
  flag('FF_ENABLE_JOB_CLEANUP', false, warned('the project directory is kept for the slot\'s next job'), false),
  flag('FF_KUBERNETES_HONOR_ENTRYPOINT', false, warned('the kubernetes executor runs the image\'s entrypoint as the pod\'s command either way'), true),
  flag('FF_POSIXLY_CORRECT_ESCAPES', false, warned('ci-runner always quotes values the POSIX way (single quotes)'), true),
  flag('FF_RESOLVE_FULL_TLS_CHAIN', false, warned('CI_SERVER_TLS_CA_FILE holds the CA file the runner trusts, as it is'), false),
  flag('FF_DISABLE_POWERSHELL_STDIN', false, noPowerShell),
  flag('FF_USE_POD_ACTIVE_DEADLINE_SECONDS', true, honoured('kubernetes: the pod\'s activeDeadlineSeconds is the job timeout + 1 s (off: none; the runner stops the pod at the timeout either way)')),
  flag('FF_USE_ADVANCED_POD_SPEC_CONFIGURATION', false, honoured('kubernetes: [[runners.kubernetes.pod_spec]] patches apply only with it on; set while it is off, they draw a warning in the job log')),
  flag('FF_SECRET_RESOLVING_FAILS_IF_MISSING', true, noSecrets),
  flag('FF_PRINT_POD_EVENTS', false, honoured('kubernetes: the pod\'s events are printed while it starts, as GitLab Runner prints them, instead of the lines about the wait')),
  flag('FF_USE_GIT_BUNDLE_URIS', true, warned('get_sources does not set transfer.bundleURI'), false),
  flag('FF_USE_GIT_NATIVE_CLONE', false, warned('get_sources always clones with init + fetch'), false),
  flag('FF_USE_DUMB_INIT_WITH_KUBERNETES_EXECUTOR', false, warned('the kubernetes executor\'s stage wrapper passes signals on itself'), false),
  flag('FF_USE_INIT_WITH_DOCKER_EXECUTOR', false, warned('the docker executor\'s stage wrapper passes signals on itself'), false),
  flag('FF_LOG_IMAGES_CONFIGURED_FOR_JOB', false, warned('the runner\'s log names a job\'s image only under --debug'), false),
  flag('FF_USE_DOCKER_AUTOSCALER_DIAL_STDIO', true, noAutoscaler),
  flag('FF_CLEAN_UP_FAILED_CACHE_EXTRACT', false, honoured('a cache that fails to extract (or is missing) removes the cache\'s paths from the project dir, as GitLab Runner does (cache/clean-up.ts)')),
  flag('FF_USE_WINDOWS_JOB_OBJECT', false, windowsOnly),
  flag('FF_TIMESTAMPS', true, honoured('every line of the job log is stamped (API v4 jobs; docs/jobs.md)')),
  flag('FF_DISABLE_AUTOMATIC_TOKEN_ROTATION', false, honoured('read from [runners.feature_flags] only, as GitLab Runner reads it: the entry\'s token is not renewed, and a warning says it is about to expire (agent/token-rotation.ts)')),
  flag('FF_USE_LEGACY_GCS_CACHE_ADAPTER', false, warned('ci-runner has one GCS cache adapter, like GitLab Runner\'s newer one (V4 signed URLs, its credentials); caches are named and stored alike either way'), false),
  flag('FF_DISABLE_UMASK_FOR_KUBERNETES_EXECUTOR', false, warned('the kubernetes executor does not set umask 0000 either way')),
  flag('FF_USE_LEGACY_S3_CACHE_ADAPTER', false, warned('ci-runner has one S3 cache adapter, like GitLab Runner\'s newer one (the AWS SDK\'s signed URLs); caches are named and stored alike either way'), false),
  flag('FF_GIT_URLS_WITHOUT_TOKENS', false, warned('ci-runner\'s git never has the job token in a URL, whatever the flag says'), true),
  flag('FF_WAIT_FOR_POD_TO_BE_REACHABLE', false, warned('the kubernetes executor waits for the pod to run before its first exec either way'), true),
  flag('FF_MASK_ALL_DEFAULT_TOKENS', true, honoured('every token prefix of GitLab\'s token overview is masked in the job log, its prefix kept')),
  flag('FF_EXPORT_HIGH_CARDINALITY_METRICS', false, warned('ci-runner exports no per-job metrics'), false),
  flag('FF_USE_FLEETING_ACQUIRE_HEARTBEATS', false, noAutoscaler),
  flag('FF_USE_EXPONENTIAL_BACKOFF_STAGE_RETRY', true, warned('a retried stage is retried without exponential back-off: at once, or after a fixed 1 s for a cache restore'), false),
  flag('FF_USE_ADAPTIVE_REQUEST_CONCURRENCY', true, warned('request_concurrency is the number of polling loops, always'), false),
  flag('FF_USE_GITALY_CORRELATION_ID', true, warned('get_sources sends no X-Gitaly-Correlation-ID header'), false),
  flag('FF_USE_GIT_PROACTIVE_AUTH', false, warned('ci-runner\'s git sends the job\'s credentials with its first request either way'), true),
  flag('FF_HASH_CACHE_KEYS', false, honoured('a cache key is stored under its SHA-256 (sharded in the store by its first two hex digits), unsanitised; a cache under the other name is found on restore (cache/key.ts)')),
  flag('FF_ENABLE_JOB_INPUTS_INTERPOLATION', true, warned('ci-runner does not announce job_inputs, so GitLab sends it no inputs')),
  flag('FF_USE_JOB_ROUTER', false, warned('ci-runner asks GitLab for jobs directly'), false),
  flag('FF_SCRIPT_TO_STEP_MIGRATION', false, noStepRunner),
  flag('FF_USE_PARALLEL_CACHE_TRANSFER', false, ownArchives, false),
  flag('FF_USE_PARALLEL_ARTIFACT_TRANSFER', false, ownArchives, false),
  flag('FF_CONCRETE', false, noStepRunner),
  flag('FF_SUSPENDABLE_ENVIRONMENTS', false, warned('ci-runner does not suspend job environments'), false),
  flag('FF_USE_NATIVE_CONTAINER_STOP', false, warned('a stopped stage\'s whole process group gets each signal, as without the flag'), false),
];

const BY_NAME = new Map(FEATURE_FLAGS.map((entry) => [entry.name, entry]));

/** The table's entry for `name`, when it is one of GitLab Runner's flags. */
export function featureFlag(name: string): FeatureFlag | undefined {
  return BY_NAME.get(name);
}

/** A job's flags: each one's value, and what the job log says about them. */
export interface ResolvedFlags {
  readonly values: ReadonlyMap<string, boolean>;
  /** GitLab Runner's `  feature flags: NAME:true, …`: the flags not at their default. */
  readonly header: string;
  /** Warning lines for the job log (without colour or `WARNING:`). */
  readonly warnings: readonly string[];
  on(name: string): boolean;
}

/**
 * Resolves every flag for one job. `config`: `[runners.feature_flags]`; `variables`: the runner's
 * `environment` then the payload's variables, in that order (later wins).
 */
export function resolveFeatureFlags(config: Readonly<Record<string, boolean>>, variables: ReadonlyArray<{ key: string; value: string }>): ResolvedFlags {
  const last = new Map<string, string>();
  for (const v of variables) last.set(v.key, v.value);
  const lookup = (name: string): string => last.get(name) ?? '';
  const values = new Map<string, boolean>();
  const warnings: string[] = [];
  for (const entry of FEATURE_FLAGS) {
    let value = entry.default;
    const configured = config[entry.name];
    if (configured !== undefined) value = configured;
    else if (last.has(entry.name)) {
      const raw = expandString(lookup(entry.name), lookup);
      const parsed = parseGoBool(raw);
      if (parsed === undefined) warnings.push(`${entry.name}: could not parse feature flag, expected bool, got ${raw}`);
      else {
        value = parsed;
        if (asksForMore(entry, value)) warnings.push(`${entry.name}=${String(value)} is not honoured: ${reasonOf(entry.support)}`);
      }
    }
    values.set(entry.name, value);
  }
  const header = FEATURE_FLAGS.filter((entry) => values.get(entry.name) !== entry.default)
    .map((entry) => `${entry.name}:${String(values.get(entry.name))}`)
    .join(', ');
  return { values, header, warnings, on: (name) => values.get(name) === true };
}

/** Every flag as a job variable (public), resolved: GitLab Runner's first variables. */
export function featureFlagVariables(flags: ResolvedFlags): Array<{ key: string; value: string; public: true }> {
  return FEATURE_FLAGS.map((entry) => ({ key: entry.name, value: String(flags.on(entry.name)), public: true as const }));
}

/** What a config.toml's `[runners.feature_flags]` draws at load: unknown names, and flags not honoured. */
export function configFlagWarnings(config: Readonly<Record<string, boolean>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(config)) {
    const entry = featureFlag(name);
    if (!entry) out.push(`\`${name}\` is not a feature flag of GitLab Runner 19.3; it is ignored`);
    else if (asksForMore(entry, value)) out.push(`\`${name} = ${String(value)}\` is not honoured: ${reasonOf(entry.support)}`);
  }
  return out;
}

/** Set to `value`, does `entry` ask for a behaviour ci-runner does not have? */
function asksForMore(entry: FeatureFlag, value: boolean): boolean {
  if (entry.support.status === 'honoured') return false;
  return value !== (entry.ours ?? entry.default);
}

function reasonOf(support: Support): string {
  return support.status === 'honoured' ? '' : support.reason;
}
