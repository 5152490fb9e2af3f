/**
 * What the kubernetes executor reads from a runner's `[runners.kubernetes]` table, after the config
 * schema has validated and normalised it (GitLab Runner's zero values, `""`, `0`, an empty table, read
 * as unset). Property names are GitLab Runner's TOML keys, so a key in the file, its schema entry and
 * its use here cannot drift apart.
 */

export type KubernetesPullPolicy = 'always' | 'if-not-present' | 'never';

/** A service as GitLab writes it: a string is `{ name }`. */
export interface KubernetesService {
  name: string;
  /** Space- or comma-separated aliases. */
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  /** `[[runners.kubernetes.services]] environment`: `NAME=value` items, the service's own variables. */
  environment?: string[];
}

interface VolumeBase {
  /** The volume's name in the pod (a DNS-1123 label). */
  name: string;
  /** `$VAR`s are expanded against the job's variables, as GitLab Runner does. */
  mount_path: string;
  sub_path?: string;
}

export type MountPropagation = 'None' | 'HostToContainer' | 'Bidirectional';

export interface HostPathVolume extends VolumeBase {
  /** Path on the node; defaults to `mount_path` (GitLab Runner's default). */
  host_path?: string;
  read_only: boolean;
  mount_propagation?: MountPropagation;
}

export interface PvcVolume extends VolumeBase {
  read_only: boolean;
  mount_propagation?: MountPropagation;
}

/** A ConfigMap or a Secret mounted as files; `items` maps keys to paths (all keys when empty). */
export interface KeyedVolume extends VolumeBase {
  read_only: boolean;
  items: Record<string, string>;
}

export interface EmptyDirVolume extends VolumeBase {
  /** `""` (the node's disk) or `"Memory"` (tmpfs). */
  medium?: string;
  size_limit?: string;
  mount_propagation?: MountPropagation;
}

export interface CsiVolume extends VolumeBase {
  driver: string;
  fs_type: string;
  read_only: boolean;
  volume_attributes: Record<string, string>;
}

export interface NfsVolume extends VolumeBase {
  server: string;
  path: string;
  read_only: boolean;
}

export interface KubernetesVolumes {
  host_path: HostPathVolume[];
  pvc: PvcVolume[];
  config_map: KeyedVolume[];
  secret: KeyedVolume[];
  empty_dir: EmptyDirVolume[];
  csi: CsiVolume[];
  nfs: NfsVolume[];
}

export interface HostAlias {
  ip: string;
  hostnames: string[];
}

/** A node selector or label selector requirement. */
export interface SelectorRequirement {
  key: string;
  operator: string;
  values: string[];
}

export interface NodeSelectorTerm {
  match_expressions: SelectorRequirement[];
  match_fields: SelectorRequirement[];
}

export interface LabelSelector {
  match_labels: Record<string, string>;
  match_expressions: SelectorRequirement[];
}

export interface PodAffinityTerm {
  label_selector?: LabelSelector;
  namespace_selector?: LabelSelector;
  namespaces: string[];
  topology_key: string;
  match_label_keys: string[];
  mismatch_label_keys: string[];
}

export interface PodAffinity {
  required_during_scheduling_ignored_during_execution: PodAffinityTerm[];
  preferred_during_scheduling_ignored_during_execution: Array<{ weight: number; pod_affinity_term: PodAffinityTerm }>;
}

export interface KubernetesAffinity {
  node_affinity?: {
    required_during_scheduling_ignored_during_execution?: { node_selector_terms: NodeSelectorTerm[] };
    preferred_during_scheduling_ignored_during_execution: Array<{ weight: number; preference: NodeSelectorTerm }>;
  };
  pod_affinity?: PodAffinity;
  pod_anti_affinity?: PodAffinity;
}

export interface ProfileOptions {
  type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhost_profile?: string;
}

export interface PodSecurityContextOptions {
  fs_group?: number;
  run_as_group?: number;
  run_as_non_root?: boolean;
  run_as_user?: number;
  supplemental_groups: number[];
  selinux_type?: string;
  seccomp_profile?: ProfileOptions;
  app_armor_profile?: ProfileOptions;
}

export interface ContainerSecurityContextOptions {
  capabilities?: { add?: string[]; drop?: string[] };
  privileged?: boolean;
  run_as_user?: number;
  run_as_group?: number;
  run_as_non_root?: boolean;
  read_only_root_filesystem?: boolean;
  allow_privilege_escalation?: boolean;
  selinux_type?: string;
  proc_mount?: 'Default' | 'Unmasked';
  seccomp_profile?: ProfileOptions;
  app_armor_profile?: ProfileOptions;
}

export interface LifecycleHandlerOptions {
  exec?: { command: string[] };
  http_get?: { host?: string; path?: string; port: number; scheme?: string; http_headers: Array<{ name: string; value: string }> };
  tcp_socket?: { host?: string; port: number };
}

export interface DnsConfigOptions {
  nameservers: string[];
  searches: string[];
  options: Array<{ name: string; value?: string }>;
}

export type PodSpecPatchType = 'strategic' | 'merge' | 'json';

/** One `[[runners.kubernetes.pod_spec]]`: a patch of the generated pod spec. */
export interface PodSpecPatchOptions {
  name: string;
  /** The patch as YAML or JSON text; or the file holding it (read for each job, as GitLab Runner does). */
  patch?: string;
  patch_path?: string;
  patch_type: PodSpecPatchType;
}

export type DnsPolicy = 'none' | 'default' | 'cluster-first' | 'cluster-first-with-host-net';

/** The resource keys, as quantities (`500m`, `1.5`, `512Mi`), and their `*_overwrite_max_allowed` bounds. */
export interface KubernetesResourceKeys {
  cpu_limit?: string;
  cpu_limit_overwrite_max_allowed?: string;
  cpu_request?: string;
  cpu_request_overwrite_max_allowed?: string;
  memory_limit?: string;
  memory_limit_overwrite_max_allowed?: string;
  memory_request?: string;
  memory_request_overwrite_max_allowed?: string;
  ephemeral_storage_limit?: string;
  ephemeral_storage_limit_overwrite_max_allowed?: string;
  ephemeral_storage_request?: string;
  ephemeral_storage_request_overwrite_max_allowed?: string;
  service_cpu_limit?: string;
  service_cpu_limit_overwrite_max_allowed?: string;
  service_cpu_request?: string;
  service_cpu_request_overwrite_max_allowed?: string;
  service_memory_limit?: string;
  service_memory_limit_overwrite_max_allowed?: string;
  service_memory_request?: string;
  service_memory_request_overwrite_max_allowed?: string;
  service_ephemeral_storage_limit?: string;
  service_ephemeral_storage_limit_overwrite_max_allowed?: string;
  service_ephemeral_storage_request?: string;
  service_ephemeral_storage_request_overwrite_max_allowed?: string;
  pod_cpu_limit?: string;
  pod_cpu_limit_overwrite_max_allowed?: string;
  pod_cpu_request?: string;
  pod_cpu_request_overwrite_max_allowed?: string;
  pod_memory_limit?: string;
  pod_memory_limit_overwrite_max_allowed?: string;
  pod_memory_request?: string;
  pod_memory_request_overwrite_max_allowed?: string;
}

export interface KubernetesOptions extends KubernetesResourceKeys {
  /** API server URL; unset: KUBECONFIG, else the in-cluster service account, else ~/.kube/config. */
  host?: string;
  /** The kubeconfig context to use when `host` is unset (kubectl's `--context`). */
  context?: string;
  bearer_token?: string;
  /** The job's KUBERNETES_BEARER_TOKEN replaces `bearer_token`. */
  bearer_token_overwrite_allowed: boolean;
  /** PEM files: the cluster's CA, a client certificate and its key. */
  ca_file?: string;
  cert_file?: string;
  key_file?: string;
  /** Where job pods go. Default `default`. */
  namespace: string;
  /** A regex the job's KUBERNETES_NAMESPACE_OVERWRITE must match to replace `namespace`. */
  namespace_overwrite_allowed?: string;
  /** Each job in a namespace of its own, `ci-job-<job id>`, made and deleted by the executor. */
  namespace_per_job: boolean;
  /** Default image when the job names none. */
  image?: string;
  /** Tried in order when an image cannot be pulled; empty = the cluster's default. */
  pull_policy: KubernetesPullPolicy[];
  /** The pull policies a job may ask for; empty = those of `pull_policy`. */
  allowed_pull_policies: KubernetesPullPolicy[];
  /** Secrets in `namespace` the pods pull their images with. */
  image_pull_secrets: string[];
  /** No imagePullSecrets in the pod: the service account's are used. */
  use_service_account_image_pull_secrets: boolean;
  /** Glob lists (GitLab Runner semantics); empty = anything allowed. */
  allowed_images: string[];
  allowed_services: string[];
  /** UIDs and GIDs a job's `kubernetes: user` may name (root only when listed). */
  allowed_users: string[];
  allowed_groups: string[];
  /** Services every job of this runner gets, before the job's own. */
  services: KubernetesService[];
  service_account?: string;
  /** A regex the job's KUBERNETES_SERVICE_ACCOUNT_OVERWRITE must match. */
  service_account_overwrite_allowed?: string;
  automount_service_account_token?: boolean;
  node_selector: Record<string, string>;
  /** A regex each KUBERNETES_NODE_SELECTOR_* value (`key=value`) must match. */
  node_selector_overwrite_allowed?: string;
  /** `"key=value"` (or `"key"`) → effect (`NoSchedule`, `PreferNoSchedule`, `NoExecute`, `""` = any). */
  node_tolerations: Record<string, string>;
  /** A regex each KUBERNETES_NODE_TOLERATIONS_* value (`key[=value]:effect`) must match. */
  node_tolerations_overwrite_allowed?: string;
  affinity: KubernetesAffinity;
  pod_labels: Record<string, string>;
  pod_labels_overwrite_allowed?: string;
  pod_annotations: Record<string, string>;
  pod_annotations_overwrite_allowed?: string;
  /** Unset: the container's security context says nothing about it. */
  privileged?: boolean;
  allow_privilege_escalation?: boolean;
  cap_add: string[];
  cap_drop: string[];
  pod_security_context: PodSecurityContextOptions;
  build_container_security_context: ContainerSecurityContextOptions;
  service_container_security_context: ContainerSecurityContextOptions;
  runtime_class_name?: string;
  priority_class_name?: string;
  scheduler_name?: string;
  dns_policy?: DnsPolicy;
  dns_config: DnsConfigOptions;
  host_aliases: HostAlias[];
  container_lifecycle: { post_start?: LifecycleHandlerOptions; pre_stop?: LifecycleHandlerOptions };
  /** Applied when FF_USE_ADVANCED_POD_SPEC_CONFIGURATION is on, in order. */
  pod_spec: PodSpecPatchOptions[];
  /** Seconds between checks of a starting pod; default 3. */
  poll_interval: number;
  /** Seconds a pod may take to start (all its containers running) before the job fails; default 180. */
  poll_timeout: number;
  /** Seconds the pod's containers get between SIGTERM and SIGKILL; default: the runner's kill_grace_period. */
  pod_termination_grace_period_seconds?: number;
  /** The grace period of the pod's deletion after the job; default: the pod's own. */
  cleanup_grace_period_seconds?: number;
  /** How long deleting the job's resources may take, ms; default 5 minutes. */
  cleanup_resources_timeout: number;
  /** Checks (5 s apart) that the service account and image pull secrets exist before the pod is made; 0 = none. */
  resource_availability_check_max_attempts: number;
  /** Tries of an API request that failed on the network (or on an error `retry_limits` names); default 5. */
  retry_limit: number;
  /** The longest wait between those tries, ms; default 2000 (at least 500). */
  retry_backoff_max: number;
  /** Tries per error text (a substring of the error). */
  retry_limits: Record<string, number>;
  /** The pod's warning events are shown while it starts and when it fails; default true. */
  print_pod_warning_events: boolean;
  /** A PodDisruptionBudget (policy/v1, minAvailable 1) keeps the job's pod from voluntary eviction. */
  pod_disruption_budget: boolean;
  volumes: KubernetesVolumes;
}
