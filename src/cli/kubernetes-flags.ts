/**
 * The `--kubernetes-*` flags of `register` and `run-once`, with GitLab Runner 19's flag and environment
 * names (the `long:` and `env:` tags of its KubernetesConfig, its spellings kept:
 * `--kubernetes-bearer_token`, `--kubernetes-service-ephemeral_storage-limit`, …). Each row names the
 * `[runners.kubernetes]` key it sets (a path for the security contexts' keys), typed against
 * `KubernetesOptions`, so a flag cannot name a key the executor does not read. Values become a raw
 * `[runners.kubernetes]` table: `register` writes it to config.toml and `run-once` parses it with the
 * same schema as the file. Maps take `key:value` (repeatable), as GitLab Runner's flags do (the Helm
 * chart's `--kubernetes-node-selector "key":"value"`); lists repeat; in the environment both are
 * comma-separated.
 */
import type { Argv } from 'yargs';
import { CiRunnerError } from '../util/errors.js';
import type { KubernetesOptions } from '../executors/kubernetes/options.js';

type Kind = 'string' | 'boolean' | 'int' | 'list' | 'int-list' | 'map' | 'int-map' | 'json';

interface KubernetesFlag {
  flag: string;
  env: string;
  kind: Kind;
  /** The key in `[runners.kubernetes]`; more than one name: a key of a sub-table. */
  path: readonly [keyof KubernetesOptions, ...string[]];
}

const row = (flag: string, env: string, kind: Kind, ...path: KubernetesFlag['path']): KubernetesFlag => ({ flag: `kubernetes-${flag}`, env, kind, path });

/** The resource keys, the build's, the services' and the pod's, each with its overwrite bound. */
const RESOURCES: KubernetesFlag[] = [
  ['', '', ['cpu', 'memory', 'ephemeral-storage']],
  ['service-', 'SERVICE_', ['cpu', 'memory', 'ephemeral_storage']],
  ['pod-', 'POD_', ['cpu', 'memory']],
].flatMap(([flagScope, envScope, kinds]) =>
  (kinds as string[]).flatMap((kind) =>
    ['limit', 'request'].flatMap((what) => {
      const key = `${flagScope === 'service-' ? 'service_' : flagScope === 'pod-' ? 'pod_' : ''}${kind.replace('-', '_')}_${what}` as keyof KubernetesOptions;
      const env = `KUBERNETES_${envScope as string}${kind.replace('-', '_').toUpperCase()}_${what.toUpperCase()}`;
      return [row(`${flagScope as string}${kind}-${what}`, env, 'string', key), row(`${flagScope as string}${kind}-${what}-overwrite-max-allowed`, `${env}_OVERWRITE_MAX_ALLOWED`, 'string', `${key}_overwrite_max_allowed` as keyof KubernetesOptions)];
    }),
  ),
);

/** A container security context's flags (GitLab Runner names no environment variables for them). */
const containerSecurity = (table: 'build_container_security_context' | 'service_container_security_context'): KubernetesFlag[] => [
  row(`${table}-capabilities-add`, '', 'list', table, 'capabilities', 'add'),
  row(`${table}-capabilities-drop`, '', 'list', table, 'capabilities', 'drop'),
  row(`${table}-privileged`, '', 'boolean', table, 'privileged'),
  row(`${table}-run-as-user`, '', 'int', table, 'run_as_user'),
  row(`${table}-run-as-group`, '', 'int', table, 'run_as_group'),
  row(`${table}-run-as-non-root`, '', 'boolean', table, 'run_as_non_root'),
  row(`${table}-read-only-root-filesystem`, '', 'boolean', table, 'read_only_root_filesystem'),
  row(`${table}-allow-privilege-escalation`, '', 'boolean', table, 'allow_privilege_escalation'),
  row(`${table}-selinux-type`, '', 'string', table, 'selinux_type'),
  row(`${table}-proc-mount`, '', 'string', table, 'proc_mount'),
  row(`${table}-seccomp_profile-type`, '', 'string', table, 'seccomp_profile', 'type'),
  row(`${table}-seccomp_profile-localhost-profile`, '', 'string', table, 'seccomp_profile', 'localhost_profile'),
  row(`${table}-app_armor_profile-type`, '', 'string', table, 'app_armor_profile', 'type'),
  row(`${table}-app_armor_profile-localhost-profile`, '', 'string', table, 'app_armor_profile', 'localhost_profile'),
];

export const KUBERNETES_FLAGS: readonly KubernetesFlag[] = [
  row('host', 'KUBERNETES_HOST', 'string', 'host'),
  row('context', 'KUBECTL_CONTEXT', 'string', 'context'),
  row('cert-file', 'KUBERNETES_CERT_FILE', 'string', 'cert_file'),
  row('key-file', 'KUBERNETES_KEY_FILE', 'string', 'key_file'),
  row('ca-file', 'KUBERNETES_CA_FILE', 'string', 'ca_file'),
  row('bearer_token_overwrite_allowed', 'KUBERNETES_BEARER_TOKEN_OVERWRITE_ALLOWED', 'boolean', 'bearer_token_overwrite_allowed'),
  row('bearer_token', 'KUBERNETES_BEARER_TOKEN', 'string', 'bearer_token'),
  row('image', 'KUBERNETES_IMAGE', 'string', 'image'),
  row('namespace', 'KUBERNETES_NAMESPACE', 'string', 'namespace'),
  row('namespace_overwrite_allowed', 'KUBERNETES_NAMESPACE_OVERWRITE_ALLOWED', 'string', 'namespace_overwrite_allowed'),
  row('namespace_per_job', 'KUBERNETES_NAMESPACE_PER_JOB', 'boolean', 'namespace_per_job'),
  row('privileged', 'KUBERNETES_PRIVILEGED', 'boolean', 'privileged'),
  row('runtime-class-name', 'KUBERNETES_RUNTIME_CLASS_NAME', 'string', 'runtime_class_name'),
  row('allow-privilege-escalation', 'KUBERNETES_ALLOW_PRIVILEGE_ESCALATION', 'boolean', 'allow_privilege_escalation'),
  ...RESOURCES,
  row('allowed-images', 'KUBERNETES_ALLOWED_IMAGES', 'list', 'allowed_images'),
  row('allowed-pull-policies', 'KUBERNETES_ALLOWED_PULL_POLICIES', 'list', 'allowed_pull_policies'),
  row('allowed-services', 'KUBERNETES_ALLOWED_SERVICES', 'list', 'allowed_services'),
  row('allowed-users', 'KUBERNETES_ALLOWED_USERS', 'list', 'allowed_users'),
  row('allowed-groups', 'KUBERNETES_ALLOWED_GROUPS', 'list', 'allowed_groups'),
  row('pull-policy', 'KUBERNETES_PULL_POLICY', 'list', 'pull_policy'),
  row('node-selector', 'KUBERNETES_NODE_SELECTOR', 'map', 'node_selector'),
  row('node_selector_overwrite_allowed', 'KUBERNETES_NODE_SELECTOR_OVERWRITE_ALLOWED', 'string', 'node_selector_overwrite_allowed'),
  row('node-tolerations', 'KUBERNETES_NODE_TOLERATIONS', 'map', 'node_tolerations'),
  row('node_tolerations_overwrite_allowed', 'KUBERNETES_NODE_TOLERATIONS_OVERWRITE_ALLOWED', 'string', 'node_tolerations_overwrite_allowed'),
  row('image-pull-secrets', 'KUBERNETES_IMAGE_PULL_SECRETS', 'list', 'image_pull_secrets'),
  row('use-service-account-image-pull-secrets', 'KUBERNETES_USE_SERVICE_ACCOUNT_IMAGE_PULL_SECRETS', 'boolean', 'use_service_account_image_pull_secrets'),
  row('pod_termination_grace_period_seconds', 'KUBERNETES_POD_TERMINATION_GRACE_PERIOD_SECONDS', 'int', 'pod_termination_grace_period_seconds'),
  row('cleanup_grace_period_seconds', 'KUBERNETES_CLEANUP_GRACE_PERIOD_SECONDS', 'int', 'cleanup_grace_period_seconds'),
  row('cleanup_resources_timeout', 'KUBERNETES_CLEANUP_RESOURCES_TIMEOUT', 'string', 'cleanup_resources_timeout'),
  row('poll-interval', 'KUBERNETES_POLL_INTERVAL', 'int', 'poll_interval'),
  row('poll-timeout', 'KUBERNETES_POLL_TIMEOUT', 'int', 'poll_timeout'),
  row('resource-availability-check-max-attempts', 'KUBERNETES_RESOURCE_AVAILABILITY_CHECK_MAX_ATTEMPTS', 'int', 'resource_availability_check_max_attempts'),
  row('retry-limit', 'KUBERNETES_REQUEST_RETRY_LIMIT', 'int', 'retry_limit'),
  row('retry-backoff-max', 'KUBERNETES_REQUEST_RETRY_BACKOFF_MAX', 'int', 'retry_backoff_max'),
  row('retry-limits', 'KUBERNETES_RETRY_LIMITS', 'int-map', 'retry_limits'),
  row('pod-labels', '', 'map', 'pod_labels'),
  row('pod_labels_overwrite_allowed', 'KUBERNETES_POD_LABELS_OVERWRITE_ALLOWED', 'string', 'pod_labels_overwrite_allowed'),
  row('scheduler-name', 'KUBERNETES_SCHEDULER_NAME', 'string', 'scheduler_name'),
  row('service-account', 'KUBERNETES_SERVICE_ACCOUNT', 'string', 'service_account'),
  row('service_account_overwrite_allowed', 'KUBERNETES_SERVICE_ACCOUNT_OVERWRITE_ALLOWED', 'string', 'service_account_overwrite_allowed'),
  row('automount-service-account-token', 'KUBERNETES_AUTOMOUNT_SERVICE_ACCOUNT_TOKEN', 'boolean', 'automount_service_account_token'),
  row('pod-annotations', '', 'map', 'pod_annotations'),
  row('pod_annotations_overwrite_allowed', 'KUBERNETES_POD_ANNOTATIONS_OVERWRITE_ALLOWED', 'string', 'pod_annotations_overwrite_allowed'),
  row('pod-security-context-fs-group', 'KUBERNETES_POD_SECURITY_CONTEXT_FS_GROUP', 'int', 'pod_security_context', 'fs_group'),
  row('pod-security-context-run-as-group', 'KUBERNETES_POD_SECURITY_CONTEXT_RUN_AS_GROUP', 'int', 'pod_security_context', 'run_as_group'),
  row('pod-security-context-run-as-non-root', 'KUBERNETES_POD_SECURITY_CONTEXT_RUN_AS_NON_ROOT', 'boolean', 'pod_security_context', 'run_as_non_root'),
  row('pod-security-context-run-as-user', 'KUBERNETES_POD_SECURITY_CONTEXT_RUN_AS_USER', 'int', 'pod_security_context', 'run_as_user'),
  row('pod-security-context-supplemental-groups', '', 'int-list', 'pod_security_context', 'supplemental_groups'),
  row('pod-security-context-selinux-type', '', 'string', 'pod_security_context', 'selinux_type'),
  row('pod-security-context-seccomp_profile-type', '', 'string', 'pod_security_context', 'seccomp_profile', 'type'),
  row('pod-security-context-seccomp_profile-localhost-profile', '', 'string', 'pod_security_context', 'seccomp_profile', 'localhost_profile'),
  row('pod-security-context-app_armor_profile-type', '', 'string', 'pod_security_context', 'app_armor_profile', 'type'),
  row('pod-security-context-app_armor_profile-localhost-profile', '', 'string', 'pod_security_context', 'app_armor_profile', 'localhost_profile'),
  ...containerSecurity('build_container_security_context'),
  ...containerSecurity('service_container_security_context'),
  row('host_aliases', '', 'json', 'host_aliases'),
  row('cap-add', 'KUBERNETES_CAP_ADD', 'list', 'cap_add'),
  row('cap-drop', 'KUBERNETES_CAP_DROP', 'list', 'cap_drop'),
  row('dns-policy', 'KUBERNETES_DNS_POLICY', 'string', 'dns_policy'),
  row('priority_class_name', 'KUBERNETES_PRIORITY_CLASS_NAME', 'string', 'priority_class_name'),
  row('print-pod-warning-events', 'KUBERNETES_PRINT_POD_WARNING_EVENTS', 'boolean', 'print_pod_warning_events'),
  row('pod-disruption-budget', 'KUBERNETES_POD_DISRUPTION_BUDGET', 'boolean', 'pod_disruption_budget'),
];

/** Adds the `--kubernetes-*` options to a command, in a "Kubernetes executor" group. */
export function addKubernetesFlags<T>(y: Argv<T>): Argv<T> {
  let out = y;
  for (const f of KUBERNETES_FLAGS) {
    const many = f.kind === 'list' || f.kind === 'int-list' || f.kind === 'map' || f.kind === 'int-map';
    const form = f.kind === 'map' || f.kind === 'int-map' ? ' (key:value, repeatable)' : many ? ' (repeatable)' : f.kind === 'json' ? ' (JSON)' : '';
    const env = f.env ? ` [env: ${f.env}${many ? ', comma-separated' : ''}]` : '';
    out = out.option(f.flag, { type: f.kind === 'boolean' ? 'boolean' : 'string', array: many, describe: `[runners.kubernetes] ${f.path.join('.')}${form}${env}`, group: 'Kubernetes executor ([runners.kubernetes]):' });
  }
  return out;
}

/** An unusable flag value, named as the user wrote it; the CLI exits with 2 (usage). */
export class KubernetesFlagError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('KUBERNETES_FLAG_INVALID', message);
  }
}

/**
 * The raw `[runners.kubernetes]` table from flags, then environment variables; keys with no value are
 * left out (so the schema's defaults apply). A value of the wrong form is left for the schema to
 * refuse, named by the caller with `kubernetesFlagOfPath`.
 */
export function kubernetesTableFromFlags(argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  for (const f of KUBERNETES_FLAGS) {
    const fromFlag = argv[f.flag];
    const given = fromFlag !== undefined && !(Array.isArray(fromFlag) && fromFlag.length === 0);
    const fromEnv = f.env ? env[f.env] : undefined;
    if (!given && (fromEnv === undefined || fromEnv === '')) continue;
    const items = given ? (Array.isArray(fromFlag) ? fromFlag.map(String) : [String(fromFlag)]) : splitList(fromEnv ?? '');
    const value = valueOf(f, given ? fromFlag : fromEnv, items);
    let target = table;
    for (const name of f.path.slice(0, -1)) target = (target[name] ??= {}) as Record<string, unknown>;
    target[f.path[f.path.length - 1] as string] = value;
  }
  return table;
}

function valueOf(f: KubernetesFlag, raw: unknown, items: string[]): unknown {
  const int = (text: string): unknown => (/^-?\d+$/.test(text.trim()) ? Number(text) : text);
  switch (f.kind) {
    case 'boolean':
      return typeof raw === 'boolean' ? raw : /^(1|true|yes|on)$/i.test(String(raw));
    case 'int':
      return int(String(raw));
    case 'string':
      return String(raw);
    case 'list':
      return items;
    case 'int-list':
      return items.map(int);
    case 'map':
    case 'int-map':
      return Object.fromEntries(items.map((item) => splitPair(item, f)).map(([key, value]) => [key, f.kind === 'int-map' ? int(value) : value]));
    case 'json':
      try {
        return JSON.parse(String(raw)) as unknown;
      } catch {
        throw new KubernetesFlagError(`--${f.flag}: not JSON: ${String(raw)}`);
      }
  }
}

/** `key:value`, split on the first colon as GitLab Runner's flag parser splits it (a value may hold colons). */
function splitPair(item: string, f: KubernetesFlag): [string, string] {
  const colon = item.indexOf(':');
  if (colon <= 0) throw new KubernetesFlagError(`--${f.flag}: "${item}" is not key:value`);
  return [item.slice(0, colon), item.slice(colon + 1)];
}

function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** `pod_security_context.fs_group` → `--kubernetes-pod-security-context-fs-group`, for messages about the parsed table. */
export function kubernetesFlagOfPath(path: readonly PropertyKey[]): string {
  const names = path.map(String);
  const f = KUBERNETES_FLAGS.find((row) => row.path.length <= names.length && row.path.every((name, i) => names[i] === name));
  return f ? `--${f.flag}` : `[runners.kubernetes] ${names.join('.')}`;
}
