/**
 * The `[runners.kubernetes]` table: GitLab Runner's key names and types, normalised into the
 * `KubernetesOptions` the kubernetes executor reads (a single `pull_policy` string becomes a list, a
 * service string becomes `{ name }`, `poll_interval`/`poll_timeout` of 0 mean GitLab's defaults).
 * GitLab Runner kubernetes keys we do not use are listed apart: they produce a warning naming them,
 * any other unknown key is an error with a suggestion (see load.ts).
 */
import { z } from 'zod';
import type { KubernetesOptions } from '../../executors/kubernetes/options.js';
import type { RunnerSection } from './section.js';

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

const keyedVolume = z.strictObject({ ...volumeBase, read_only: z.boolean().default(false), items: stringMap });

const volumes = z
  .strictObject({
    host_path: z.array(z.strictObject({ ...volumeBase, host_path: absolutePath.optional(), read_only: z.boolean().default(false) })).default([]),
    pvc: z.array(z.strictObject({ ...volumeBase, read_only: z.boolean().default(false) })).default([]),
    config_map: z.array(keyedVolume).default([]),
    secret: z.array(keyedVolume).default([]),
    empty_dir: z.array(z.strictObject({ ...volumeBase, medium: z.enum(['', 'Memory']).optional(), size_limit: quantity })).default([]),
  })
  .prefault({});

/** GitLab's table form of a service; a plain string is shorthand for `{ name }`. */
const service = z.preprocess(
  (value) => (typeof value === 'string' ? { name: value } : value),
  z.strictObject(
    {
      name: z.string({ error: 'the service image (required)' }).min(1, 'the service image (required)'),
      alias: z.string().min(1).optional(),
      entrypoint: z.array(z.string()).optional(),
      command: z.array(z.string()).optional(),
    },
    { error: 'an image name string or a table with name, alias, entrypoint, command' },
  ),
);

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
  volumes,
  host_aliases: z.array(z.strictObject({ ip: z.string().min(1), hostnames: z.array(z.string().min(1)).min(1) })).default([]),
});

export type KubernetesConfig = z.output<typeof kubernetesSchema>;

// The executor is written against KubernetesOptions: a schema change that breaks it must not compile.
type Assignable<T extends KubernetesOptions> = T;
export type KubernetesConfigIsKubernetesOptions = Assignable<KubernetesConfig>;

/** GitLab Runner `[runners.kubernetes]` keys with no effect here: a warning names them. */
export const IGNORED_KUBERNETES_KEYS = new Set([
  'context', 'bearer_token_overwrite_allowed', 'namespace_overwrite_allowed', 'namespace_per_job', 'service_account_overwrite_allowed',
  'pod_labels_overwrite_allowed', 'pod_annotations_overwrite_allowed', 'cpu_limit_overwrite_max_allowed', 'cpu_request_overwrite_max_allowed',
  'memory_limit_overwrite_max_allowed', 'memory_request_overwrite_max_allowed', 'ephemeral_storage_limit', 'ephemeral_storage_request',
  'helper_image', 'helper_image_flavor', 'helper_image_autoset_arch_and_os', 'helper_cpu_limit', 'helper_cpu_request', 'helper_memory_limit',
  'helper_memory_request', 'helper_ephemeral_storage_limit', 'helper_ephemeral_storage_request', 'service_ephemeral_storage_limit',
  'service_ephemeral_storage_request', 'allow_privilege_escalation', 'allowed_pull_policies', 'allowed_users', 'allowed_groups',
  'cleanup_grace_period_seconds', 'cleanup_resources_timeout', 'dns_policy', 'dns_config', 'cap_add', 'cap_drop', 'priority_class_name',
  'scheduler_name', 'runtime_class_name', 'pod_security_context', 'build_container_security_context', 'helper_container_security_context',
  'service_container_security_context', 'affinity', 'node_affinity', 'pod_affinity', 'pod_anti_affinity', 'terminationGracePeriodSeconds',
  'resource_availability_check_max_attempts', 'pod_spec', 'retry_limit', 'retry_limits', 'retry_backoff_max', 'print_pod_warning_events',
  'use_service_account_image_pull_secrets', 'init_permissions_container_security_context', 'logs_base_dir', 'scripts_base_dir',
  'host_network', 'container_lifecycle', 'hostname',
]);

export const KNOWN_KUBERNETES_KEYS = Object.keys(kubernetesSchema.shape);

export const kubernetesSection = {
  key: 'kubernetes',
  schema: kubernetesSchema.prefault({}),
  keys: { known: KNOWN_KUBERNETES_KEYS, ignored: IGNORED_KUBERNETES_KEYS },
} as const satisfies RunnerSection;
