/**
 * What the kubernetes executor reads from a runner's `[runners.kubernetes]` table, after the config
 * schema has validated and normalised it. Property names are GitLab Runner's TOML keys, so a key in
 * the file, its schema entry and its use here cannot drift apart.
 */

export type KubernetesPullPolicy = 'always' | 'if-not-present' | 'never';

/** A service as GitLab writes it: a string is `{ name }`. */
export interface KubernetesService {
  name: string;
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  /** The job's `kubernetes: user` for this service, as runAsUser/runAsGroup. */
  runAs?: { runAsUser?: number; runAsGroup?: number };
  /** Names of the service's own variables, read from the services' Secret under `svc-<i>.<name>`. */
  ownVariables?: string[];
}

interface VolumeBase {
  /** The volume's name in the pod (a DNS-1123 label). */
  name: string;
  mount_path: string;
  sub_path?: string;
}

export interface HostPathVolume extends VolumeBase {
  /** Path on the node; defaults to `mount_path` (GitLab Runner's default). */
  host_path?: string;
  read_only: boolean;
}

export interface PvcVolume extends VolumeBase {
  read_only: boolean;
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
}

export interface KubernetesVolumes {
  host_path: HostPathVolume[];
  pvc: PvcVolume[];
  config_map: KeyedVolume[];
  secret: KeyedVolume[];
  empty_dir: EmptyDirVolume[];
}

export interface HostAlias {
  ip: string;
  hostnames: string[];
}

export interface KubernetesOptions {
  /** API server URL; unset: KUBECONFIG, else the in-cluster service account, else ~/.kube/config. */
  host?: string;
  bearer_token?: string;
  /** PEM files: the cluster's CA, a client certificate and its key. */
  ca_file?: string;
  cert_file?: string;
  key_file?: string;
  /** Where job pods go. Default `default`. */
  namespace: string;
  /** Default image when the job names none. */
  image?: string;
  /** Tried in order when an image cannot be pulled; empty = the cluster's default. */
  pull_policy: KubernetesPullPolicy[];
  /** Secrets in `namespace` the pods pull their images with. */
  image_pull_secrets: string[];
  /** Glob lists (GitLab Runner semantics); empty = anything allowed. */
  allowed_images: string[];
  allowed_services: string[];
  /** Services every job of this runner gets, before the job's own. */
  services: KubernetesService[];
  /** Kubernetes quantities (`500m`, `1.5`, `512Mi`) for the build container and for each service. */
  cpu_limit?: string;
  cpu_request?: string;
  memory_limit?: string;
  memory_request?: string;
  service_cpu_limit?: string;
  service_cpu_request?: string;
  service_memory_limit?: string;
  service_memory_request?: string;
  service_account?: string;
  node_selector: Record<string, string>;
  /** `"key=value"` (or `"key"`) → effect (`NoSchedule`, `PreferNoSchedule`, `NoExecute`, `""` = any). */
  node_tolerations: Record<string, string>;
  pod_labels: Record<string, string>;
  pod_annotations: Record<string, string>;
  privileged: boolean;
  /** Seconds between checks of a starting pod; default 3. */
  poll_interval: number;
  /** Seconds a pod may take to start (all its containers running) before the job fails; default 180. */
  poll_timeout: number;
  /** Seconds the pod's containers get between SIGTERM and SIGKILL when it is deleted; default: the runner's kill_grace_period. */
  pod_termination_grace_period_seconds?: number;
  volumes: KubernetesVolumes;
  host_aliases: HostAlias[];
}
