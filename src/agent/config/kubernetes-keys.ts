/**
 * The sub-tables of `[runners.kubernetes]` that ci-runner's kubernetes executor does not read yet, as key
 * tables (keys.ts): GitLab Runner 19's pod settings (affinity, DNS, security contexts, lifecycle hooks,
 * pod spec patches, the pause-pod autoscaler) and two volume kinds. Their keys repeat the way GitLab
 * Runner's structs repeat (a node selector requirement, a label selector, a security context), so each
 * shape is written once and used wherever GitLab Runner uses it. kubernetes-schema.ts places them.
 */
import { warnedTable, type KeyTable } from './keys.js';

export const KUBERNETES_NOT_YET = "ci-runner's kubernetes executor does not apply it yet";

const table = (names: readonly string[], tables: Readonly<Record<string, KeyTable>> = {}): KeyTable => warnedTable(KUBERNETES_NOT_YET, names, tables);

const requirement = table(['key', 'operator', 'values']);
const nodeSelectorTerm = table([], { match_expressions: requirement, match_fields: requirement });
const labelSelector = table(['match_labels'], { match_expressions: requirement });
const podAffinityTerm = table(['match_label_keys', 'mismatch_label_keys', 'namespaces', 'topology_key'], { label_selector: labelSelector, namespace_selector: labelSelector });
const podAffinity = table([], {
  preferred_during_scheduling_ignored_during_execution: table(['weight'], { pod_affinity_term: podAffinityTerm }),
  required_during_scheduling_ignored_during_execution: podAffinityTerm,
});

const affinity = table([], {
  node_affinity: table([], {
    preferred_during_scheduling_ignored_during_execution: table(['weight'], { preference: nodeSelectorTerm }),
    required_during_scheduling_ignored_during_execution: table([], { node_selector_terms: nodeSelectorTerm }),
  }),
  pod_affinity: podAffinity,
  pod_anti_affinity: podAffinity,
});

const profile = table(['type', 'localhost_profile']);
const containerSecurityContext = table(
  ['privileged', 'run_as_user', 'run_as_group', 'run_as_non_root', 'read_only_root_filesystem', 'allow_privilege_escalation', 'selinux_type', 'proc_mount'],
  { capabilities: table(['add', 'drop']), seccomp_profile: profile, app_armor_profile: profile },
);

const lifecycleHandler = table([], {
  exec: table(['command']),
  http_get: table(['host', 'path', 'port', 'scheme'], { http_headers: table(['name', 'value']) }),
  tcp_socket: table(['host', 'port']),
});

/** The tables kubernetes-schema.ts places: `pod` ones directly under `[runners.kubernetes]`. */
export const KUBERNETES_SUBTABLES = {
  pod: {
    affinity,
    dns_config: table(['nameservers', 'searches'], { options: table(['name', 'value']) }),
    pod_security_context: table(['fs_group', 'run_as_group', 'run_as_non_root', 'run_as_user', 'supplemental_groups', 'selinux_type'], {
      seccomp_profile: profile,
      app_armor_profile: profile,
    }),
    build_container_security_context: containerSecurityContext,
    service_container_security_context: containerSecurityContext,
    init_permissions_container_security_context: containerSecurityContext,
    container_lifecycle: table([], { post_start: lifecycleHandler, pre_stop: lifecycleHandler }),
    pod_spec: table(['name', 'patch', 'patch_path', 'patch_type']),
    autoscaler: table(['max_pause_pods', 'pause_pod_image', 'pause_pod_image_pull_secrets', 'pause_pod_priority_class_name'], {
      policy: table(['periods', 'timezone', 'idle_count', 'idle_time', 'scale_factor', 'scale_factor_limit', 'preemptive_mode']),
    }),
  },
  containerSecurityContext,
  csi: table(['name', 'mount_path', 'sub_path', 'driver', 'fs_type', 'read_only', 'volume_attributes']),
  nfs: table(['name', 'mount_path', 'sub_path', 'server', 'path', 'read_only']),
} as const;
