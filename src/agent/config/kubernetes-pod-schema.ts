/**
 * The tables of `[runners.kubernetes]` that describe the job's pod: `affinity`, the security contexts,
 * `dns_config`, `container_lifecycle`, `[[pod_spec]]` patches, `[[host_aliases]]` and `[[services]]`,
 * with GitLab Runner 19's keys, as zod schemas and their key tables (keys.ts). Their structs repeat
 * (a selector requirement, a label selector, a security context, a lifecycle handler), so each shape is
 * written once and used where GitLab Runner uses it. kubernetes-schema.ts places them.
 */
import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import { warned } from '../../util/compat.js';
import { key, warnedTable, type KeyTable } from './keys.js';
import { HELPER, optString, readTable, stringList, stringMap } from './kubernetes-keys.js';

const optInt = z.int().min(0).optional();
const optBool = z.boolean().optional();

// --- affinity ---------------------------------------------------------------------------------

const NODE_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const;
const requirementObject = z.strictObject({
  key: z.string().min(1),
  operator: z.enum(NODE_OPERATORS, { error: `one of ${NODE_OPERATORS.join(', ')}` }),
  values: stringList,
});
const requirement = readTable(requirementObject);

const nodeSelectorTermObject = z.strictObject({ match_expressions: z.array(requirementObject).default([]), match_fields: z.array(requirementObject).default([]) });
const nodeSelectorTerm = readTable(nodeSelectorTermObject, { match_expressions: requirement, match_fields: requirement });

const labelSelectorObject = z.strictObject({ match_labels: stringMap, match_expressions: z.array(requirementObject).default([]) });
const labelSelector = readTable(labelSelectorObject, { match_expressions: requirement });

const podAffinityTermObject = z.strictObject({
  label_selector: labelSelectorObject.optional(),
  namespace_selector: labelSelectorObject.optional(),
  namespaces: stringList,
  topology_key: z.string().default(''),
  match_label_keys: stringList,
  mismatch_label_keys: stringList,
});
const podAffinityTerm = readTable(podAffinityTermObject, { label_selector: labelSelector, namespace_selector: labelSelector });

const weightedPodAffinityTermObject = z.strictObject({ weight: z.int().min(1).max(100), pod_affinity_term: podAffinityTermObject });
const podAffinityObject = z.strictObject({
  required_during_scheduling_ignored_during_execution: z.array(podAffinityTermObject).default([]),
  preferred_during_scheduling_ignored_during_execution: z.array(weightedPodAffinityTermObject).default([]),
});
const podAffinity = readTable(podAffinityObject, {
  required_during_scheduling_ignored_during_execution: podAffinityTerm,
  preferred_during_scheduling_ignored_during_execution: readTable(weightedPodAffinityTermObject, { pod_affinity_term: podAffinityTerm }),
});

const preferredSchedulingTermObject = z.strictObject({ weight: z.int().min(1).max(100), preference: nodeSelectorTermObject });
const nodeSelectorObject = z.strictObject({ node_selector_terms: z.array(nodeSelectorTermObject).default([]) });
const nodeAffinityObject = z.strictObject({
  required_during_scheduling_ignored_during_execution: nodeSelectorObject.optional(),
  preferred_during_scheduling_ignored_during_execution: z.array(preferredSchedulingTermObject).default([]),
});

const affinityObject = z.strictObject({ node_affinity: nodeAffinityObject.optional(), pod_affinity: podAffinityObject.optional(), pod_anti_affinity: podAffinityObject.optional() });
export const affinity = affinityObject.prefault({});
export const AFFINITY_KEYS = readTable(affinityObject, {
  node_affinity: readTable(nodeAffinityObject, {
    required_during_scheduling_ignored_during_execution: readTable(nodeSelectorObject, { node_selector_terms: nodeSelectorTerm }),
    preferred_during_scheduling_ignored_during_execution: readTable(preferredSchedulingTermObject, { preference: nodeSelectorTerm }),
  }),
  pod_affinity: podAffinity,
  pod_anti_affinity: podAffinity,
});

// --- security contexts ------------------------------------------------------------------------

const PROFILE_TYPES = ['RuntimeDefault', 'Unconfined', 'Localhost'] as const;
const profileObject = z.strictObject({ type: z.union([z.literal(''), z.enum(PROFILE_TYPES)], { error: `one of ${PROFILE_TYPES.join(', ')}` }).default(''), localhost_profile: optString });
/** `type = ""` is no profile, as GitLab Runner reads it; Localhost needs its profile. */
const profile = profileObject
  .refine((p) => p.type !== 'Localhost' || p.localhost_profile !== undefined, { message: 'type Localhost needs localhost_profile', path: ['localhost_profile'] })
  .transform((p) => (p.type === '' ? undefined : { type: p.type, ...(p.localhost_profile ? { localhost_profile: p.localhost_profile } : {}) }))
  .optional();
const PROFILE_KEYS = readTable(profileObject);

const capabilitiesObject = z.strictObject({ add: z.array(z.string().min(1)).optional(), drop: z.array(z.string().min(1)).optional() });

/** proc_mount as GitLab Runner reads it: any case of `default` or `unmasked`; `""` is unset. */
const procMount = z
  .string()
  .refine((v) => ['', 'default', 'unmasked'].includes(v.trim().toLowerCase()), 'default or unmasked')
  .optional()
  .transform((v) => {
    const lower = v?.trim().toLowerCase();
    return lower === 'default' ? ('Default' as const) : lower === 'unmasked' ? ('Unmasked' as const) : undefined;
  });

const containerSecurityObject = z.strictObject({
  capabilities: capabilitiesObject.optional(),
  privileged: optBool,
  run_as_user: optInt,
  run_as_group: optInt,
  run_as_non_root: optBool,
  read_only_root_filesystem: optBool,
  allow_privilege_escalation: optBool,
  selinux_type: optString,
  proc_mount: procMount,
  seccomp_profile: profile,
  app_armor_profile: profile,
});
export const containerSecurityContext = containerSecurityObject.prefault({});
export const CONTAINER_SECURITY_KEYS = readTable(containerSecurityObject, { capabilities: readTable(capabilitiesObject), seccomp_profile: PROFILE_KEYS, app_armor_profile: PROFILE_KEYS });

const podSecurityObject = z.strictObject({
  fs_group: optInt,
  run_as_group: optInt,
  run_as_non_root: optBool,
  run_as_user: optInt,
  supplemental_groups: z.array(z.int().min(0)).default([]),
  selinux_type: optString,
  seccomp_profile: profile,
  app_armor_profile: profile,
});
export const podSecurityContext = podSecurityObject.prefault({});
export const POD_SECURITY_KEYS = readTable(podSecurityObject, { seccomp_profile: PROFILE_KEYS, app_armor_profile: PROFILE_KEYS });

/** The containers GitLab Runner has and ci-runner's executor does not. */
const INIT_PERMISSIONS = warned(
  "ci-runner's kubernetes executor starts no init-permissions container: the checkout is unpacked by the build container itself, as the image's user",
);
const containerSecurityWarned = (reason: ReturnType<typeof warned>): KeyTable => ({
  keys: Object.fromEntries(Object.entries(CONTAINER_SECURITY_KEYS.keys).map(([name, entry]) => [name, key(reason, entry.table ? warnedLike(entry.table, reason) : undefined)])),
});
function warnedLike(table: KeyTable, reason: ReturnType<typeof warned>): KeyTable {
  return { keys: Object.fromEntries(Object.keys(table.keys).map((name) => [name, key(reason)])) };
}
export const HELPER_SECURITY_KEYS = containerSecurityWarned(HELPER);
export const INIT_PERMISSIONS_SECURITY = { support: INIT_PERMISSIONS, table: containerSecurityWarned(INIT_PERMISSIONS) };

// --- DNS, lifecycle, pod spec patches, host aliases, services ----------------------------------

const dnsOptionObject = z.strictObject({ name: z.string().min(1), value: z.string().optional() });
const dnsConfigObject = z.strictObject({ nameservers: stringList, searches: stringList, options: z.array(dnsOptionObject).default([]) });
export const dnsConfig = dnsConfigObject.prefault({});
export const DNS_CONFIG_KEYS = readTable(dnsConfigObject, { options: readTable(dnsOptionObject) });

const port = z.int().min(1).max(65535);
const httpHeaderObject = z.strictObject({ name: z.string().min(1), value: z.string().default('') });
const execObject = z.strictObject({ command: z.array(z.string()).min(1) });
const httpGetObject = z.strictObject({ host: optString, path: optString, port, scheme: z.union([z.literal(''), z.enum(['HTTP', 'HTTPS'])]).optional().transform((v) => v || undefined), http_headers: z.array(httpHeaderObject).default([]) });
const tcpSocketObject = z.strictObject({ host: optString, port });
const handlerObject = z.strictObject({ exec: execObject.optional(), http_get: httpGetObject.optional(), tcp_socket: tcpSocketObject.optional() });
const HANDLER_KEYS = readTable(handlerObject, { exec: readTable(execObject), http_get: readTable(httpGetObject, { http_headers: readTable(httpHeaderObject) }), tcp_socket: readTable(tcpSocketObject) });
const lifecycleObject = z.strictObject({ post_start: handlerObject.optional(), pre_stop: handlerObject.optional() });
export const containerLifecycle = lifecycleObject.prefault({});
export const LIFECYCLE_KEYS = readTable(lifecycleObject, { post_start: HANDLER_KEYS, pre_stop: HANDLER_KEYS });

const podSpecObject = z.strictObject({
  name: z.string().default(''),
  patch: optString.refine((text) => text === undefined || parses(text), 'YAML or JSON'),
  patch_path: optString,
  patch_type: z
    .union([z.literal(''), z.enum(['strategic', 'merge', 'json'])], { error: 'strategic, merge or json' })
    .default('')
    .transform((v) => v || 'strategic'),
});
export const podSpecPatch = podSpecObject
  .refine((p) => !(p.patch && p.patch_path), 'ambiguous patch: both patch path and patch provided')
  .refine((p) => Boolean(p.patch ?? p.patch_path), 'patch or patch_path');
export const POD_SPEC_KEYS = readTable(podSpecObject);

function parses(text: string): boolean {
  try {
    parseYaml(text);
    return true;
  } catch {
    return false;
  }
}

export const hostAlias = z.strictObject({ ip: z.string().min(1), hostnames: z.array(z.string().min(1)).min(1) });
export const HOST_ALIAS_KEYS = readTable(hostAlias);

/** GitLab's table form of a service (`[[runners.kubernetes.services]]`). */
const serviceTable = z.strictObject(
  {
    name: z.string({ error: 'the service image (required)' }).min(1, 'the service image (required)'),
    alias: optString,
    entrypoint: z.array(z.string()).optional(),
    command: z.array(z.string()).optional(),
    environment: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*=/, 'NAME=value')).optional(),
  },
  { error: 'an image name string or a table with name, alias, entrypoint, command, environment' },
);
/** A plain string is shorthand for `{ name }`. */
export const service = z.preprocess((value) => (typeof value === 'string' ? { name: value } : value), serviceTable);
export const SERVICE_KEYS = readTable(serviceTable);

/** `autoscaler`: GitLab Runner's pause pods, which ci-runner does not make. */
export const AUTOSCALER_REASON = "ci-runner keeps no pause pods warm: each job's pod is made when the job starts (the cluster's own autoscaler still adds nodes)";
export const AUTOSCALER = warnedTable(AUTOSCALER_REASON, ['max_pause_pods', 'pause_pod_image', 'pause_pod_image_pull_secrets', 'pause_pod_priority_class_name'], {
  policy: warnedTable(AUTOSCALER_REASON, ['periods', 'timezone', 'idle_count', 'idle_time', 'scale_factor', 'scale_factor_limit', 'preemptive_mode']),
});
