/**
 * The `[runners.kubernetes]` table: GitLab Runner 19's key names, types and defaults, normalised into
 * the `KubernetesOptions` the kubernetes executor reads (a single `pull_policy` string becomes a list,
 * a service string becomes `{ name }`, GitLab Runner's zero values mean its defaults). KUBERNETES_KEYS
 * gives every key GitLab Runner has in the table and its sub-tables a status (keys.ts); the pod's
 * sub-tables are in kubernetes-pod-schema.ts, the volumes in kubernetes-volumes-schema.ts.
 */
import { z } from 'zod';
import type { KubernetesOptions, KubernetesResourceKeys } from '../../executors/kubernetes/options.js';
import { parseDurationMs } from '../../util/duration.js';
import { warned } from '../../util/compat.js';
import { key, older } from './keys.js';
import { HELPER, optString, quantity, readTable, regexString, stringList, stringMap } from './kubernetes-keys.js';
import {
  affinity,
  AFFINITY_KEYS,
  AUTOSCALER,
  AUTOSCALER_REASON,
  CONTAINER_SECURITY_KEYS,
  containerLifecycle,
  containerSecurityContext,
  dnsConfig,
  DNS_CONFIG_KEYS,
  HELPER_SECURITY_KEYS,
  hostAlias,
  HOST_ALIAS_KEYS,
  INIT_PERMISSIONS_SECURITY,
  LIFECYCLE_KEYS,
  podSecurityContext,
  POD_SECURITY_KEYS,
  podSpecPatch,
  POD_SPEC_KEYS,
  service,
  SERVICE_KEYS,
} from './kubernetes-pod-schema.js';
import { volumes, VOLUMES_KEYS } from './kubernetes-volumes-schema.js';

const POLICIES = ['always', 'if-not-present', 'never'] as const;
const pullPolicy = z.enum(POLICIES, { error: 'one of "always", "if-not-present", "never"' });
const pullPolicies = z
  .union([z.literal('').transform(() => []), pullPolicy.transform((p) => [p]), z.array(pullPolicy)], { error: 'one of "always", "if-not-present", "never", or a list of them tried in order' })
  .default([]);

/** Seconds; 0 (what GitLab Runner writes for an unset key) means the default. */
const seconds = (fallback: number) =>
  z
    .int()
    .min(0)
    .default(fallback)
    .transform((v) => (v === 0 ? fallback : v));

/** A Go duration (`"5m"`, `"1h30m"`, `"300s"`) or an integer of nanoseconds, as ms; 0 or `""`: `fallbackMs`. */
const goDuration = (fallbackMs: number) =>
  z
    .union([z.string(), z.int().min(0)])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '' || v === 0) return fallbackMs;
      const ms = typeof v === 'number' ? v / 1e6 : parseDurationMs(v);
      if (ms === undefined || ms <= 0) {
        ctx.issues.push({ code: 'custom', input: v, message: 'a duration such as "5m", "300s" or "1h30m"' });
        return z.NEVER;
      }
      return ms;
    });

const optBool = z.boolean().optional();
const optSeconds = z.int().min(0).optional();

/** The resource keys: every one a quantity. */
const RESOURCE_KEYS = ['cpu', 'memory', 'ephemeral_storage'].flatMap((kind) =>
  ['', 'service_', 'pod_'].flatMap((scope) =>
    scope === 'pod_' && kind === 'ephemeral_storage' ? [] : ['limit', 'request'].flatMap((what) => [`${scope}${kind}_${what}`, `${scope}${kind}_${what}_overwrite_max_allowed`]),
  ),
);
const resources = Object.fromEntries(RESOURCE_KEYS.map((name) => [name, quantity])) as { [K in keyof Required<KubernetesResourceKeys>]: typeof quantity };

const kubernetesObject = z.strictObject({
  host: optString.refine((v) => v === undefined || /^https?:\/\/[^/]/.test(v), 'an http:// or https:// URL of the API server'),
  context: optString,
  bearer_token: optString,
  bearer_token_overwrite_allowed: z.boolean().default(false),
  ca_file: optString,
  cert_file: optString,
  key_file: optString,
  namespace: z
    .string()
    .regex(/^(?:[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/, 'a namespace name (DNS-1123 label)')
    .default('default')
    .transform((v) => v || 'default'),
  namespace_overwrite_allowed: regexString,
  namespace_per_job: z.boolean().default(false),
  image: optString,
  pull_policy: pullPolicies,
  allowed_pull_policies: pullPolicies,
  image_pull_secrets: stringList,
  use_service_account_image_pull_secrets: z.boolean().default(false),
  allowed_images: stringList,
  allowed_services: stringList,
  allowed_users: stringList,
  allowed_groups: stringList,
  services: z.array(service).default([]),
  ...resources,
  service_account: optString,
  service_account_overwrite_allowed: regexString,
  automount_service_account_token: optBool,
  node_selector: stringMap,
  node_selector_overwrite_allowed: regexString,
  node_tolerations: z
    .record(z.string().regex(/^[^=\s]+(=[^=\s]*)?$/, 'a "key=value" or "key" toleration'), z.enum(['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']))
    .default({}),
  node_tolerations_overwrite_allowed: regexString,
  affinity,
  pod_labels: stringMap,
  pod_labels_overwrite_allowed: regexString,
  pod_annotations: stringMap,
  pod_annotations_overwrite_allowed: regexString,
  privileged: optBool,
  allow_privilege_escalation: optBool,
  cap_add: stringList,
  cap_drop: stringList,
  pod_security_context: podSecurityContext,
  build_container_security_context: containerSecurityContext,
  service_container_security_context: containerSecurityContext,
  runtime_class_name: optString,
  priority_class_name: optString,
  scheduler_name: optString,
  dns_policy: z
    .union([z.literal(''), z.enum(['none', 'default', 'cluster-first', 'cluster-first-with-host-net'])], { error: 'none, default, cluster-first or cluster-first-with-host-net' })
    .optional()
    .transform((v) => v || undefined),
  dns_config: dnsConfig,
  host_aliases: z.array(hostAlias).default([]),
  container_lifecycle: containerLifecycle,
  pod_spec: z.array(podSpecPatch).default([]),
  poll_interval: seconds(3),
  poll_timeout: seconds(180),
  pod_termination_grace_period_seconds: optSeconds,
  cleanup_grace_period_seconds: optSeconds,
  cleanup_resources_timeout: goDuration(5 * 60_000),
  /** GitLab Runner: 0 checks nothing, a negative number is its default of 5. */
  resource_availability_check_max_attempts: z
    .int()
    .default(0)
    .transform((v) => (v < 0 ? 5 : v)),
  retry_limit: z
    .int()
    .default(0)
    .transform((v) => (v > 0 ? v : 5)),
  /** ms; at most 0 is the default of 2000, at least 500. */
  retry_backoff_max: z
    .int()
    .default(0)
    .transform((v) => (v <= 0 ? 2000 : Math.max(v, 500))),
  retry_limits: z.record(z.string().min(1), z.int().min(0)).default({}),
  print_pod_warning_events: z.boolean().default(true),
  pod_disruption_budget: z.boolean().default(false),
  volumes,
});

export const kubernetesSchema = kubernetesObject;

export type KubernetesConfig = z.output<typeof kubernetesSchema>;

// The executor is written against KubernetesOptions: a schema change that breaks it must not compile.
type Assignable<T extends KubernetesOptions> = T;
export type KubernetesConfigIsKubernetesOptions = Assignable<KubernetesConfig>;

/** Keys of GitLab Runner's helper container, which ci-runner does not have. */
const HELPER_KEYS = [
  'helper_image', 'helper_image_flavor', 'helper_image_autoset_arch_and_os', 'helper_cpu_limit', 'helper_cpu_limit_overwrite_max_allowed',
  'helper_cpu_request', 'helper_cpu_request_overwrite_max_allowed', 'helper_memory_limit', 'helper_memory_limit_overwrite_max_allowed',
  'helper_memory_request', 'helper_memory_request_overwrite_max_allowed', 'helper_ephemeral_storage_limit',
  'helper_ephemeral_storage_limit_overwrite_max_allowed', 'helper_ephemeral_storage_request', 'helper_ephemeral_storage_request_overwrite_max_allowed',
];

/** `[runners.kubernetes]`: every key of GitLab Runner 19's. */
export const KUBERNETES_KEYS = readTable(
  kubernetesObject,
  {
    affinity: AFFINITY_KEYS,
    pod_security_context: POD_SECURITY_KEYS,
    build_container_security_context: CONTAINER_SECURITY_KEYS,
    service_container_security_context: CONTAINER_SECURITY_KEYS,
    dns_config: DNS_CONFIG_KEYS,
    host_aliases: HOST_ALIAS_KEYS,
    container_lifecycle: LIFECYCLE_KEYS,
    pod_spec: POD_SPEC_KEYS,
    services: SERVICE_KEYS,
    volumes: VOLUMES_KEYS,
  },
  {
    ...Object.fromEntries(HELPER_KEYS.map((name) => [name, key(HELPER)])),
    helper_container_security_context: key(HELPER, HELPER_SECURITY_KEYS),
    init_permissions_container_security_context: key(INIT_PERMISSIONS_SECURITY.support, INIT_PERMISSIONS_SECURITY.table),
    logs_base_dir: key(warned("ci-runner's kubernetes executor writes no log file in the pod: each stage's output comes back through its exec")),
    scripts_base_dir: key(warned(`ci-runner's kubernetes executor sends each stage's script with the stage, under the builds dir`)),
    autoscaler: key(warned(AUTOSCALER_REASON), AUTOSCALER),
    terminationGracePeriodSeconds: older(warned('GitLab Runner 17 removed it; pod_termination_grace_period_seconds is read')),
  },
);

/** Always present in an entry: the defaults when the table is absent. */
export const kubernetesSection = kubernetesSchema.prefault({});

