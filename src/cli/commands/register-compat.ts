/**
 * Every flag of GitLab Runner 19.3's `register` (its own flags and those generated from the
 * `[[runners]]` config structs, with their environment names) that ci-runner's register does not
 * take as such, with how it is treated: an executor ci-runner lacks refuses the command (exit 2);
 * anything else is accepted with one warning naming the flag and the reason. The flags ci-runner
 * honours are declared by register-options.ts, docker-flags.ts, kubernetes-flags.ts, custom-flags.ts,
 * cache-flags.ts and tls-flags.ts. A test holds this
 * table and those against GitLab Runner's list, so a flag of GitLab Runner's cannot be dropped silently.
 * Facts (names) from GitLab Runner's source; nothing here is generated at run time.
 */
import { refused, warned, type Support } from '../../util/compat.js';
import type { EnvFlag } from '../env-options.js';
import { KUBERNETES_KEYS } from '../../agent/config/kubernetes-schema.js';
import { OUR_EXECUTORS } from '../../agent/config/runner-schema.js';

type Row = readonly [flag: string, env: string];

const notWritten = (table: string): Support =>
  warned(`register does not write [${table}] settings from flags; set the key in that table of the runner's entry in config.toml, or in a --template-config file (see docs/configuration.md)`);
const noExecutor = (executor: string): Support => refused(`the ${executor} executor is not available in ci-runner (use ${OUR_EXECUTORS.join(', ')})`);

/** Settings of the entry itself that register does not write. */
const ENTRY: readonly Row[] = [
  ['strict-check-interval', 'RUNNER_STRICT_CHECK_INTERVAL'],
  ['unhealthy-requests-limit', 'RUNNER_UNHEALTHY_REQUESTS_LIMIT'],
  ['unhealthy-interval', ''],
  ['job-status-final-update-retry-limit', 'RUNNER_job_status_final_update_retry_limit'],
  ['clone-url', 'CLONE_URL'],
  ['proxy-exec', 'RUNNER_PROXY_EXEC'],
  ['pre-get-sources-script', 'RUNNER_PRE_GET_SOURCES_SCRIPT'],
  ['post-get-sources-script', 'RUNNER_POST_GET_SOURCES_SCRIPT'],
  ['prepare-timeout', 'RUNNER_PREPARE_TIMEOUT'],
  ['get-sources-timeout', 'RUNNER_GET_SOURCES_TIMEOUT'],
  ['debug-trace-disabled', 'RUNNER_DEBUG_TRACE_DISABLED'],
  ['safe-directory-checkout', 'RUNNER_SAFE_DIRECTORY_CHECKOUT'],
  ['clean-git-config', 'RUNNER_CLEAN_GIT_CONFIG'],
  ['feature-flags', 'FEATURE_FLAGS'],
  ['runner-monitoring', ''],
  ['use-slot-cgroups', 'RUNNER_USE_SLOT_CGROUPS'],
  ['slot-cgroup-template', 'RUNNER_SLOT_CGROUP_TEMPLATE'],
  ['step-runner-image', 'STEP_RUNNER_IMAGE'],
];

/** The [runners.docker] keys ci-runner does not apply (the others are docker-flags.ts's). */
const DOCKER: readonly Row[] = [
  ['docker-service-slot-cgroup-template', 'DOCKER_SERVICE_SLOT_CGROUP_TEMPLATE'],
  ['docker-isolation', 'DOCKER_ISOLATION'],
  ['docker-helper-image', 'DOCKER_HELPER_IMAGE'],
  ['docker-helper-image-flavor', 'DOCKER_HELPER_IMAGE_FLAVOR'],
];

/**
 * GitLab Runner's `--kubernetes-*` flags that cli/kubernetes-flags.ts does not take: those of its helper
 * container and of the containers and directories ci-runner's executor does not have (the reasons the
 * config keys have), and `--kubernetes-affinity`, a table no flag can hold.
 */
const KUBERNETES_HELPER: readonly Row[] = [
  ...['cpu', 'memory', 'ephemeral_storage'].flatMap((kind) =>
    ['limit', 'request'].flatMap((what): Row[] => {
      const env = `KUBERNETES_HELPER_${kind.toUpperCase()}_${what.toUpperCase()}`;
      return [[`kubernetes-helper-${kind}-${what}`, env], [`kubernetes-helper-${kind}-${what}-overwrite-max-allowed`, `${env}_OVERWRITE_MAX_ALLOWED`]];
    }),
  ),
  ['kubernetes-helper-image', 'KUBERNETES_HELPER_IMAGE'],
  ['kubernetes-helper-image-flavor', 'KUBERNETES_HELPER_IMAGE_FLAVOR'],
  ['kubernetes-helper-image-autoset-arch-and-os', 'KUBERNETES_HELPER_IMAGE_AUTOSET_ARCH_AND_OS'],
  ...securityContextRows('helper_container_security_context'),
];

function securityContextRows(table: string): Row[] {
  return ['capabilities-add', 'capabilities-drop', 'privileged', 'run-as-user', 'run-as-group', 'run-as-non-root', 'read-only-root-filesystem', 'allow-privilege-escalation', 'selinux-type', 'proc-mount', 'seccomp_profile-type', 'seccomp_profile-localhost-profile', 'app_armor_profile-type', 'app_armor_profile-localhost-profile'].map(
    (name): Row => [`kubernetes-${table}-${name}`, ''],
  );
}

const kubernetesKey = (key: string): Support => {
  const entry = KUBERNETES_KEYS.keys[key];
  return entry && entry.support.status !== 'honoured' ? entry.support : warned(`set [runners.kubernetes] ${key} in config.toml`);
};

const MACHINE: readonly Row[] = [
  ['machine-max-growth-rate', 'MACHINE_MAX_GROWTH_RATE'],
  ['machine-idle-nodes', 'MACHINE_IDLE_COUNT'],
  ['machine-idle-scale-factor', 'MACHINE_IDLE_SCALE_FACTOR'],
  ['machine-idle-count-min', 'MACHINE_IDLE_COUNT_MIN'],
  ['machine-idle-time', 'MACHINE_IDLE_TIME'],
  ['machine-max-builds', 'MACHINE_MAX_BUILDS'],
  ['machine-machine-driver', 'MACHINE_DRIVER'],
  ['machine-machine-name', 'MACHINE_NAME'],
  ['machine-machine-options', 'MACHINE_OPTIONS'],
  ['machine-machine-options-with-name', 'MACHINE_OPTIONS_WITH_NAME'],
  ['machine-max-removal-attempts', 'MACHINE_MAX_REMOVAL_ATTEMPTS'],
];

const SSH: readonly Row[] = [
  ['ssh-user', 'SSH_USER'],
  ['ssh-password', 'SSH_PASSWORD'],
  ['ssh-host', 'SSH_HOST'],
  ['ssh-port', 'SSH_PORT'],
  ['ssh-identity-file', 'SSH_IDENTITY_FILE'],
  ['ssh-disable-strict-host-key-checking', 'DISABLE_STRICT_HOST_KEY_CHECKING'],
  ['ssh-known-hosts-file', 'KNOWN_HOSTS_FILE'],
];

const PARALLELS: readonly Row[] = [
  ['parallels-base-name', 'PARALLELS_BASE_NAME'],
  ['parallels-template-name', 'PARALLELS_TEMPLATE_NAME'],
  ['parallels-disable-snapshots', 'PARALLELS_DISABLE_SNAPSHOTS'],
  ['parallels-time-server', 'PARALLELS_TIME_SERVER'],
  ['parallels-allowed-images', 'PARALLELS_ALLOWED_IMAGES'],
];

const VIRTUALBOX: readonly Row[] = [
  ['virtualbox-base-name', 'VIRTUALBOX_BASE_NAME'],
  ['virtualbox-base-snapshot', 'VIRTUALBOX_BASE_SNAPSHOT'],
  ['virtualbox-base-folder', 'VIRTUALBOX_BASE_FOLDER'],
  ['virtualbox-disable-snapshots', 'VIRTUALBOX_DISABLE_SNAPSHOTS'],
  ['virtualbox-allowed-images', 'VIRTUALBOX_ALLOWED_IMAGES'],
  ['virtualbox-start-type', 'VIRTUALBOX_START_TYPE'],
];

const rows = (list: readonly Row[], support: Support): EnvFlag[] =>
  list.map(([flag, env]) => ({ flag, env: env ? [env] : [], kind: 'string', describe: `GitLab Runner's --${flag}`, hidden: true, support }));

/** GitLab Runner's register flags ci-runner's register does not take, each with its Support. */
export const REGISTER_COMPAT_FLAGS: readonly EnvFlag[] = [
  ...rows(ENTRY, warned("register does not write this setting from a flag; set its key in the runner's entry in config.toml, or in a --template-config file (see docs/configuration.md)")),
  ...rows(DOCKER, notWritten('runners.docker')),
  ...rows(KUBERNETES_HELPER, kubernetesKey('helper_image')),
  ...rows(securityContextRows('init_permissions_container_security_context'), kubernetesKey('init_permissions_container_security_context')),
  ...rows([['kubernetes-logs-base-dir', 'KUBERNETES_LOGS_BASE_DIR']], kubernetesKey('logs_base_dir')),
  ...rows([['kubernetes-scripts-base-dir', 'KUBERNETES_SCRIPTS_BASE_DIR']], kubernetesKey('scripts_base_dir')),
  ...rows([['kubernetes-affinity', '']], warned('affinity is a table no flag can hold: set [runners.kubernetes.affinity] in config.toml (docs/executors/kubernetes.md)')),
  ...rows(MACHINE, noExecutor('docker+machine')),
  ...rows(SSH, noExecutor('ssh')),
  ...rows(PARALLELS, noExecutor('parallels')),
  ...rows(VIRTUALBOX, noExecutor('virtualbox')),
];
