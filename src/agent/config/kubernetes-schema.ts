/**
 * The `[runners.kubernetes]` table: GitLab Runner's key names and types, normalised into the
 * `KubernetesOptions` the kubernetes executor reads (a single `pull_policy` string becomes a list, a
 * service string becomes `{ name }`, `poll_interval`/`poll_timeout` of 0 mean GitLab's defaults).
 * KUBERNETES_KEYS gives every key GitLab Runner has in the table and its sub-tables a status (keys.ts);
 * the sub-tables ci-runner does not read yet are in kubernetes-keys.ts.
 */
import { z } from 'zod';
import type { KubernetesOptions } from '../../executors/kubernetes/options.js';
import { honoured, warned } from '../../util/compat.js';
import { key, keyTable, older } from './keys.js';
import { KUBERNETES_NOT_YET, KUBERNETES_SUBTABLES } from './kubernetes-keys.js';

const stringList = z.array(z.string().min(1)).default([]);
const stringMap = z.record(z.string().min(1), z.string()).default({});

const pullPolicy = z.enum(['always', 'if-not-present', 'never'], { error: 'one of "always", "if-not-present", "never"' });

/** A Kubernetes resource quantity: `500m`, `1.5`, `2`, `512Mi`, `1G`. */
const QUANTITY = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const quantity = z
  .union([z.string().regex(QUANTITY, 'a Kubernetes quantity such as "500m", "1.5", "512Mi" or "2Gi"'), z.number().nonnegative()])
  .transform((v) => String(v))
  .optional();

/** A name Kubernetes accepts for a volume (DNS-1123 label). */
const volumeName = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a DNS-1123 label: lowercase letters, digits and "-", at most 63');
const absolutePath = z.string().regex(/^\//, 'an absolute path');

const volumeBase = {
  name: volumeName,
  mount_path: absolutePath,
  sub_path: z.string().min(1).optional(),
};

const hostPathVolume = z.strictObject({ ...volumeBase, host_path: absolutePath.optional(), read_only: z.boolean().default(false) });
const pvcVolume = z.strictObject({ ...volumeBase, read_only: z.boolean().default(false) });
const keyedVolume = z.strictObject({ ...volumeBase, read_only: z.boolean().default(false), items: stringMap });
const emptyDirVolume = z.strictObject({ ...volumeBase, medium: z.enum(['', 'Memory']).optional(), size_limit: quantity });

const volumesTable = z.strictObject({
  host_path: z.array(hostPathVolume).default([]),
  pvc: z.array(pvcVolume).default([]),
  config_map: z.array(keyedVolume).default([]),
  secret: z.array(keyedVolume).default([]),
  empty_dir: z.array(emptyDirVolume).default([]),
});

const hostAlias = z.strictObject({ ip: z.string().min(1), hostnames: z.array(z.string().min(1)).min(1) });

/** GitLab's table form of a service (`[[runners.kubernetes.services]]`). */
const serviceTable = z.strictObject(
  {
    name: z.string({ error: 'the service image (required)' }).min(1, 'the service image (required)'),
    alias: z.string().min(1).optional(),
    entrypoint: z.array(z.string()).optional(),
    command: z.array(z.string()).optional(),
  },
  { error: 'an image name string or a table with name, alias, entrypoint, command' },
);

/** A plain string is shorthand for `{ name }`. */
const service = z.preprocess((value) => (typeof value === 'string' ? { name: value } : value), serviceTable);

/** Seconds; 0 (what GitLab Runner writes for an unset key) means the default. */
const seconds = (fallback: number) =>
  z
    .int()
    .min(0)
    .default(fallback)
    .transform((v) => (v === 0 ? fallback : v));

export const kubernetesSchema = z.strictObject({
  host: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL of the API server' }).optional(),
  bearer_token: z.string().min(1).optional(),
  ca_file: z.string().min(1).optional(),
  cert_file: z.string().min(1).optional(),
  key_file: z.string().min(1).optional(),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name (DNS-1123 label)').default('default'),
  image: z.string().min(1).optional(),
  pull_policy: z
    .union([pullPolicy.transform((p) => [p]), z.array(pullPolicy)], { error: 'one of "always", "if-not-present", "never", or a list of them tried in order' })
    .default([]),
  image_pull_secrets: stringList,
  allowed_images: stringList,
  allowed_services: stringList,
  services: z.array(service).default([]),
  cpu_limit: quantity,
  cpu_request: quantity,
  memory_limit: quantity,
  memory_request: quantity,
  service_cpu_limit: quantity,
  service_cpu_request: quantity,
  service_memory_limit: quantity,
  service_memory_request: quantity,
  service_account: z.string().min(1).optional(),
  node_selector: stringMap,
  node_tolerations: z
    .record(z.string().regex(/^[^=\s]+(=[^=\s]*)?$/, 'a "key=value" or "key" toleration'), z.enum(['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']))
    .default({}),
  pod_labels: stringMap,
  pod_annotations: stringMap,
  privileged: z.boolean().default(false),
  poll_interval: seconds(3),
  poll_timeout: seconds(180),
  pod_termination_grace_period_seconds: z.int().min(0).optional(),
  volumes: volumesTable.prefault({}),
  host_aliases: z.array(hostAlias).default([]),
});

export type KubernetesConfig = z.output<typeof kubernetesSchema>;

// The executor is written against KubernetesOptions: a schema change that breaks it must not compile.
type Assignable<T extends KubernetesOptions> = T;
export type KubernetesConfigIsKubernetesOptions = Assignable<KubernetesConfig>;

const notYet = warned(KUBERNETES_NOT_YET);
const HELPER = warned("ci-runner's kubernetes executor has no helper container: get_sources, artifacts and cache run on the runner");
const volumeKeys = { name: key(honoured()), mount_path: key(honoured()), sub_path: key(honoured()) };

const VOLUMES_KEYS = keyTable(volumesTable, {
  host_path: key(honoured(), keyTable(hostPathVolume, { ...volumeKeys, host_path: key(honoured()), read_only: key(honoured()), mount_propagation: key(notYet) })),
  pvc: key(honoured(), keyTable(pvcVolume, { ...volumeKeys, read_only: key(honoured()), mount_propagation: key(notYet) })),
  config_map: key(honoured(), keyTable(keyedVolume, { ...volumeKeys, read_only: key(honoured()), items: key(honoured()) })),
  secret: key(honoured(), keyTable(keyedVolume, { ...volumeKeys, read_only: key(honoured()), items: key(honoured()) })),
  empty_dir: key(honoured(), keyTable(emptyDirVolume, { ...volumeKeys, medium: key(honoured()), size_limit: key(honoured()), mount_propagation: key(notYet) })),
  csi: key(notYet, KUBERNETES_SUBTABLES.csi),
  nfs: key(notYet, KUBERNETES_SUBTABLES.nfs),
});

const SERVICE_KEYS = keyTable(serviceTable, {
  name: key(honoured()),
  alias: key(honoured()),
  entrypoint: key(honoured()),
  command: key(honoured()),
  environment: key(notYet),
});

/** Keys of GitLab Runner 19's the kubernetes executor does not apply yet. */
const NOT_YET_KEYS = [
  'context', 'bearer_token_overwrite_allowed', 'namespace_overwrite_allowed', 'namespace_per_job', 'runtime_class_name',
  'allow_privilege_escalation', 'cpu_limit_overwrite_max_allowed', 'cpu_request_overwrite_max_allowed', 'memory_limit_overwrite_max_allowed',
  'memory_request_overwrite_max_allowed', 'ephemeral_storage_limit', 'ephemeral_storage_limit_overwrite_max_allowed', 'ephemeral_storage_request',
  'ephemeral_storage_request_overwrite_max_allowed', 'service_cpu_limit_overwrite_max_allowed', 'service_cpu_request_overwrite_max_allowed',
  'service_memory_limit_overwrite_max_allowed', 'service_memory_request_overwrite_max_allowed', 'service_ephemeral_storage_limit',
  'service_ephemeral_storage_limit_overwrite_max_allowed', 'service_ephemeral_storage_request', 'service_ephemeral_storage_request_overwrite_max_allowed',
  'pod_cpu_limit', 'pod_cpu_limit_overwrite_max_allowed', 'pod_cpu_request', 'pod_cpu_request_overwrite_max_allowed', 'pod_memory_limit',
  'pod_memory_limit_overwrite_max_allowed', 'pod_memory_request', 'pod_memory_request_overwrite_max_allowed', 'allowed_pull_policies',
  'allowed_users', 'allowed_groups', 'node_selector_overwrite_allowed', 'node_tolerations_overwrite_allowed', 'service_account_overwrite_allowed',
  'automount_service_account_token', 'pod_labels_overwrite_allowed', 'pod_annotations_overwrite_allowed', 'cleanup_grace_period_seconds',
  'cleanup_resources_timeout', 'dns_policy', 'cap_add', 'cap_drop', 'priority_class_name', 'scheduler_name', 'pod_disruption_budget',
  'resource_availability_check_max_attempts', 'retry_limit', 'retry_limits', 'retry_backoff_max', 'print_pod_warning_events',
  'use_service_account_image_pull_secrets', 'logs_base_dir', 'scripts_base_dir',
];

/** Keys of GitLab Runner 19's about its helper container, which ci-runner does not have. */
const HELPER_KEYS = [
  'helper_image', 'helper_image_flavor', 'helper_image_autoset_arch_and_os', 'helper_cpu_limit', 'helper_cpu_limit_overwrite_max_allowed',
  'helper_cpu_request', 'helper_cpu_request_overwrite_max_allowed', 'helper_memory_limit', 'helper_memory_limit_overwrite_max_allowed',
  'helper_memory_request', 'helper_memory_request_overwrite_max_allowed', 'helper_ephemeral_storage_limit',
  'helper_ephemeral_storage_limit_overwrite_max_allowed', 'helper_ephemeral_storage_request', 'helper_ephemeral_storage_request_overwrite_max_allowed',
];

/** `[runners.kubernetes]`: every key of GitLab Runner 19's. */
export const KUBERNETES_KEYS = keyTable(kubernetesSchema, {
  host: key(honoured()),
  cert_file: key(honoured()),
  key_file: key(honoured()),
  ca_file: key(honoured()),
  bearer_token: key(honoured()),
  image: key(honoured()),
  namespace: key(honoured()),
  privileged: key(honoured()),
  cpu_limit: key(honoured()),
  cpu_request: key(honoured()),
  memory_limit: key(honoured()),
  memory_request: key(honoured()),
  service_cpu_limit: key(honoured()),
  service_cpu_request: key(honoured()),
  service_memory_limit: key(honoured()),
  service_memory_request: key(honoured()),
  pull_policy: key(honoured()),
  node_selector: key(honoured()),
  node_tolerations: key(honoured()),
  image_pull_secrets: key(honoured()),
  service_account: key(honoured()),
  pod_labels: key(honoured()),
  pod_annotations: key(honoured()),
  pod_termination_grace_period_seconds: key(honoured()),
  poll_interval: key(honoured()),
  poll_timeout: key(honoured()),
  allowed_images: key(honoured()),
  allowed_services: key(honoured()),
  volumes: key(honoured(), VOLUMES_KEYS),
  host_aliases: key(honoured(), keyTable(hostAlias, { ip: key(honoured()), hostnames: key(honoured()) })),
  services: key(honoured(), SERVICE_KEYS),
  ...Object.fromEntries(NOT_YET_KEYS.map((name) => [name, key(notYet)])),
  ...Object.fromEntries(HELPER_KEYS.map((name) => [name, key(HELPER)])),
  ...Object.fromEntries(Object.entries(KUBERNETES_SUBTABLES.pod).map(([name, table]) => [name, key(notYet, table)])),
  helper_container_security_context: key(HELPER, KUBERNETES_SUBTABLES.containerSecurityContext),
  terminationGracePeriodSeconds: older(warned('GitLab Runner 17 removed it; pod_termination_grace_period_seconds is read')),
});

/** Always present in an entry: the defaults when the table is absent. */
export const kubernetesSection = kubernetesSchema.prefault({});
