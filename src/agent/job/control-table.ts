/**
 * Every control variable GitLab Runner 19 reads from a job (its `common/build_settings.go`, the helper
 * commands' environment, the docker and kubernetes executors' overwrites), with what ci-runner does
 * with it (STYLE.md habit 15): control-variables.ts reads the honoured ones, a job that sets a warned
 * one gets one warning line naming it, and docs/jobs.md lists them all. Feature flags (`FF_*`) have
 * their own table. A `prefix` entry stands for every variable starting with its name.
 */
import { honoured, warned, type Support } from '../../util/compat.js';

export interface ControlVariable {
  name: string;
  /** The entry covers every variable whose name starts with `name`. */
  prefix?: boolean;
  support: Support;
  /** What applies when the job does not set it. */
  default: string;
  /** What a value may be. */
  accepts: string;
}

const ATTEMPTS = 'an integer from 1 to 10 (outside: clamped, with a warning)';
const BOOL = '`true` or `false` (Go\'s ParseBool: 1, t, T, TRUE, True, 0, f, …)';
const FLAGS = 'git options separated by spaces, or `none`; options that run programs, read config or reach outside the checkout are refused (see "Getting the sources" in docs/jobs.md)';

const noSecrets = warned('this runner resolves no `secrets:` (Vault, cloud secret managers): the job gets none of them');
const kubernetesOverwrite = honoured('by the kubernetes executor, where `[runners.kubernetes]` allows it; above a bound or not matching, the job fails with GitLab Runner\'s message (docs/executors/kubernetes.md); other executors ignore it');
const noHelperContainer = warned("ci-runner's kubernetes executor has no helper container: get_sources, artifacts and cache run on the runner");
const noFastzip = warned('the runner\'s own archiver is used for artifacts and cache (there is no fastzip archiver to tune)');
const noHelper = warned('there is no helper image: artifacts and cache move in the runner process');

export const CONTROL_VARIABLES: readonly ControlVariable[] = [
  // Getting the sources.
  { name: 'GIT_STRATEGY', support: honoured(), default: '`fetch` when the server allows it, else `clone`', accepts: '`clone`, `fetch`, `none` or `empty`' },
  { name: 'GIT_CHECKOUT', support: honoured(), default: '`true`', accepts: BOOL },
  { name: 'GIT_DEPTH', support: honoured('read by GitLab into `git_info.depth`; also read by the runner for API v1 jobs'), default: 'the server\'s depth (GitLab: 20 for new projects), 0 = full history', accepts: 'a non-negative integer' },
  { name: 'GIT_CLEAN_FLAGS', support: honoured(), default: '`-ffdx`', accepts: `${FLAGS}; git clean's -f -d -x -X -q -n -e/--exclude` },
  { name: 'GIT_FETCH_EXTRA_FLAGS', support: honoured(), default: '`--prune --quiet`', accepts: `${FLAGS}; git fetch's options that shape what is fetched` },
  { name: 'GIT_CLONE_EXTRA_FLAGS', support: honoured('applied where get_sources runs `git clone` (API v1 jobs, clone strategy); API v4 jobs fetch refspecs into a new repository, as GitLab Runner does without FF_USE_GIT_NATIVE_CLONE, and a job setting it is told so'), default: 'none', accepts: `${FLAGS}; git clone's options that shape what is fetched` },
  { name: 'GIT_CLONE_PATH', support: honoured('with `[runners.custom_build_dir] enabled` (default: on for docker and kubernetes, off for shell); refused outside the builds dir'), default: 'the runner\'s project dir', accepts: 'a path within CI_BUILDS_DIR' },
  { name: 'GIT_SUBMODULE_STRATEGY', support: honoured(), default: '`none`', accepts: '`none`, `normal` or `recursive`' },
  { name: 'GIT_SUBMODULE_PATHS', support: honoured(), default: 'every submodule', accepts: 'submodule paths (git pathspecs) separated by spaces, `:(exclude)<path>` to leave one out' },
  { name: 'GIT_SUBMODULE_DEPTH', support: honoured(), default: 'GIT_DEPTH', accepts: 'a non-negative integer, 0 = full history' },
  { name: 'GIT_SUBMODULE_UPDATE_FLAGS', support: honoured(), default: 'none', accepts: `${FLAGS}; git submodule update's --remote, --merge, --rebase, --jobs, …` },
  { name: 'GIT_SUBMODULE_FORCE_HTTPS', support: honoured(), default: '`false`', accepts: BOOL },
  { name: 'GIT_LFS_SKIP_SMUDGE', support: honoured(), default: '`false` (`git lfs pull` after the checkout when git-lfs is installed and a file of the checkout is tracked by it)', accepts: BOOL },
  // Attempts.
  { name: 'GET_SOURCES_ATTEMPTS', support: honoured(), default: '1', accepts: ATTEMPTS },
  { name: 'ARTIFACT_DOWNLOAD_ATTEMPTS', support: honoured(), default: '1', accepts: ATTEMPTS },
  { name: 'RESTORE_CACHE_ATTEMPTS', support: honoured('a restore is tried again (after `Retrying...`) when no key was restored because the cache store could not be reached or answered 5xx; a missing cache or an unusable archive is not (cache/restore.ts)'), default: '1', accepts: ATTEMPTS },
  { name: 'EXECUTOR_JOB_SECTION_ATTEMPTS', support: honoured('the docker executor runs a step or after_script again in a new container when its container was removed under it, as GitLab Runner\'s does; the others run a stage once (script-controls.ts)'), default: '1', accepts: ATTEMPTS },
  { name: 'SECRETS_RETRIEVAL_ATTEMPTS', support: noSecrets, default: '1', accepts: ATTEMPTS },
  // Scripts.
  { name: 'AFTER_SCRIPT_IGNORE_ERRORS', support: honoured('`false`: a failing after_script fails a job that had succeeded (script-controls.ts)'), default: '`true`', accepts: BOOL },
  { name: 'RUNNER_SCRIPT_TIMEOUT', support: honoured('bounds the steps together; after_script still runs (docs/jobs.md, "Timeouts")'), default: 'the job timeout', accepts: 'a Go duration (`10m`, `1h30m`)' },
  { name: 'RUNNER_AFTER_SCRIPT_TIMEOUT', support: honoured('within what is left of the job timeout (docs/jobs.md, "Timeouts")'), default: '`5m`', accepts: 'a Go duration' },
  { name: 'CI_DEBUG_TRACE', support: honoured('`set -x` in the job\'s scripts'), default: '`false`', accepts: BOOL },
  { name: 'CI_DEBUG_SERVICES', support: warned('services\' own output is not copied into the job log'), default: '`false`', accepts: BOOL },
  // Cache.
  { name: 'CACHE_FALLBACK_KEY', support: honoured('tried after the cache\'s own fallback keys; a key ending in `-protected` is refused, as GitLab Runner refuses it'), default: 'none', accepts: 'a cache key' },
  { name: 'CACHE_REQUEST_TIMEOUT', support: honoured('each cache download and upload (src/cache/)'), default: '10 (minutes)', accepts: 'an integer of minutes' },
  { name: 'CACHE_COMPRESSION_LEVEL', support: honoured('the deflate level of the cache\'s zip (fastest 1 … slowest 9)'), default: '`default`', accepts: '`fastest`, `fast`, `default`, `slow`, `slowest`' },
  { name: 'CACHE_COMPRESSION_FORMAT', support: warned('caches are zip archives, as GitLab Runner\'s default: `tarzstd` and `zipzstd` get a warning line and a zip'), default: '`zip`', accepts: '`zip`, `tarzstd`, `zipzstd`' },
  { name: 'CACHE_TRANSFER_BUFFER_SIZE', support: noHelper, default: '4 MiB', accepts: 'bytes' },
  { name: 'CACHE_CHUNK_SIZE', support: noHelper, default: '16 MiB', accepts: 'bytes' },
  { name: 'CACHE_CONCURRENCY', support: noHelper, default: '16', accepts: 'an integer' },
  // Artifacts.
  { name: 'ARTIFACT_COMPRESSION_LEVEL', support: honoured('as deflate levels 0 (stored), 1, zlib\'s default, 7 and 9, for every artifact format (GitLab Runner applies it with FF_USE_FASTZIP)'), default: '`default`', accepts: '`fastest`, `fast`, `default`, `slow`, `slowest`' },
  { name: 'FASTZIP_ARCHIVER_CONCURRENCY', support: noFastzip, default: 'the number of CPUs', accepts: 'an integer' },
  { name: 'FASTZIP_ARCHIVER_BUFFER_SIZE', support: noFastzip, default: '2 MiB', accepts: 'bytes' },
  { name: 'FASTZIP_EXTRACTOR_CONCURRENCY', support: noFastzip, default: 'the number of CPUs', accepts: 'an integer' },
  { name: 'ARCHIVER_STAGING_DIR', support: noHelper, default: 'the system temp dir', accepts: 'a directory' },
  { name: 'TRANSFER_METER_FREQUENCY', support: warned('artifact and cache transfers print no progress meter'), default: '`0` (off)', accepts: 'a Go duration (`5s`)' },
  { name: 'RUNNER_GENERATE_ARTIFACTS_METADATA', support: warned('no SLSA provenance metadata is generated for artifacts'), default: '`false`', accepts: BOOL },
  { name: 'SLSA_PROVENANCE_SCHEMA_VERSION', support: warned('no SLSA provenance metadata is generated for artifacts'), default: '`v1`', accepts: '`v1`' },
  // Images.
  {
    name: 'DOCKER_AUTH_CONFIG',
    support: honoured('its `auths` log the image and service pulls in (docker; kubernetes: the pod\'s image pull secret), before the runner\'s own docker config and the job\'s `credentials`; its `credsStore`/`credHelpers` are not run (they would run a program on the runner\'s host), with a warning'),
    default: 'none',
    accepts: 'a docker `config.json` document (a job variable, or the runner\'s `environment`)',
  },
  { name: 'HEALTHCHECK_TCP_PORT', support: honoured('docker: the one port waited for (a service\'s own variable, or the job\'s); kubernetes waits for no port'), default: 'every port the service image exposes', accepts: 'a TCP port' },
  // Kubernetes overwrites (GitLab Runner's `executors/kubernetes/overwrites.go`; ci-runner's executors/kubernetes/overwrites.ts).
  ...[
    ['KUBERNETES_NAMESPACE_OVERWRITE', '`namespace_overwrite_allowed`'],
    ['KUBERNETES_SERVICE_ACCOUNT_OVERWRITE', '`service_account_overwrite_allowed`'],
    ['KUBERNETES_BEARER_TOKEN', '`bearer_token_overwrite_allowed`'],
    ...['CPU_LIMIT', 'CPU_REQUEST', 'MEMORY_LIMIT', 'MEMORY_REQUEST', 'EPHEMERAL_STORAGE_LIMIT', 'EPHEMERAL_STORAGE_REQUEST'].flatMap((kind) => [
      [`KUBERNETES_${kind}`, `\`${kind.toLowerCase()}_overwrite_max_allowed\``],
      [`KUBERNETES_SERVICE_${kind}`, `\`service_${kind.toLowerCase()}_overwrite_max_allowed\``],
    ]),
    ...['CPU_LIMIT', 'CPU_REQUEST', 'MEMORY_LIMIT', 'MEMORY_REQUEST'].map((kind) => [`KUBERNETES_POD_${kind}`, `\`pod_${kind.toLowerCase()}_overwrite_max_allowed\``]),
  ].map(([name, key]): ControlVariable => ({ name: name ?? '', support: kubernetesOverwrite, default: 'the `[runners.kubernetes]` setting', accepts: `as GitLab Runner: within ${key ?? ''} of \`[runners.kubernetes]\`` })),
  ...['KUBERNETES_HELPER_CPU_LIMIT', 'KUBERNETES_HELPER_CPU_REQUEST', 'KUBERNETES_HELPER_MEMORY_LIMIT', 'KUBERNETES_HELPER_MEMORY_REQUEST', 'KUBERNETES_HELPER_EPHEMERAL_STORAGE_LIMIT', 'KUBERNETES_HELPER_EPHEMERAL_STORAGE_REQUEST'].map(
    (name): ControlVariable => ({ name, support: noHelperContainer, default: 'none', accepts: 'a Kubernetes quantity' }),
  ),
  ...[
    ['KUBERNETES_POD_LABELS_', 'pod_labels_overwrite_allowed'],
    ['KUBERNETES_POD_ANNOTATIONS_', 'pod_annotations_overwrite_allowed'],
    ['KUBERNETES_NODE_SELECTOR_', 'node_selector_overwrite_allowed'],
    ['KUBERNETES_NODE_TOLERATIONS_', 'node_tolerations_overwrite_allowed'],
  ].map(([name, key]): ControlVariable => ({ name: name ?? '', prefix: true, support: kubernetesOverwrite, default: 'the `[runners.kubernetes]` setting', accepts: `\`key=value\` (tolerations: \`key[=value]:effect\`) matching \`${key ?? ''}\` of \`[runners.kubernetes]\`` })),
];

/** The table's entry for `name` (an exact entry, else a prefix one). */
export function controlVariable(name: string): ControlVariable | undefined {
  return CONTROL_VARIABLES.find((entry) => entry.name === name) ?? CONTROL_VARIABLES.find((entry) => entry.prefix === true && name.startsWith(entry.name));
}
