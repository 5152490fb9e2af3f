/**
 * What the docker executor reads from a runner's `[runners.docker]` table, after the config schema
 * has validated and normalised it. Property names are GitLab Runner's TOML keys, so a key in the file,
 * its schema entry and its use here cannot drift apart.
 */

export type PullPolicy = 'always' | 'if-not-present' | 'never';

/** A service as GitLab writes it: a string is `{ name }`. */
export interface ServiceSpec {
  name: string;
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  /** `NAME=value` for this service only (the runner's services). */
  environment?: string[];
}

/**
 * Keys that only pass a value to `docker run` (or `docker network create`) are documented where they
 * become flags (create-args.ts); the others here.
 */
export interface DockerOptions {
  /** DOCKER_HOST for the CLI (`unix:///…`, `tcp://…`). */
  host?: string;
  /** DOCKER_TLS_VERIFY and DOCKER_CERT_PATH for the CLI. */
  tls_verify: boolean;
  tls_cert_path?: string;
  /** Default image when the job names none. */
  image?: string;
  hostname?: string;
  runtime?: string;
  /** Docker size strings as the CLI takes them (`512m`, `2g`). */
  memory?: string;
  memory_swap?: string;
  memory_reservation?: string;
  cgroup_parent?: string;
  cpuset_cpus?: string;
  cpuset_mems?: string;
  /** CPUs as the CLI takes them (`1.5`). */
  cpus?: string;
  cpu_shares?: number;
  dns: string[];
  dns_search: string[];
  privileged: boolean;
  /** Services' privilege when set; else `privileged`'s. */
  services_privileged?: boolean;
  /** Ignore a job's `image:entrypoint`: the image's own always runs. */
  disable_entrypoint_overwrite: boolean;
  /** Build stages run as this user instead of the image's USER (GitLab Runner's `user`). */
  user?: string;
  /** Users the build may run as; empty: any, or only `user` when that is set. */
  allowed_users: string[];
  group_add: string[];
  userns_mode?: string;
  cap_add: string[];
  cap_drop: string[];
  oom_kill_disable: boolean;
  oom_score_adjust?: number;
  security_opt: string[];
  services_security_opt: string[];
  devices: string[];
  device_cgroup_rules: string[];
  gpus?: string;
  /** Image glob → devices given to the services it matches. */
  services_devices: Record<string, string[]>;
  /** A container-path-only volume lives for the job alone, instead of across the project's jobs. */
  disable_cache: boolean;
  /** `/host:/ctr[:ro|:rw]` binds, `name:/ctr` named volumes, or `/ctr` volumes the executor provides. */
  volumes: string[];
  /** Keep the containers' anonymous volumes and the job's own volumes when they are removed. */
  volume_keep: boolean;
  volume_driver?: string;
  /** `--opt`s of the volumes the executor creates. */
  volume_driver_ops: Record<string, string>;
  /** Host directory holding the container-path-only volumes, in place of docker volumes. */
  cache_dir?: string;
  extra_hosts: string[];
  volumes_from: string[];
  network_mode?: string;
  pid_mode?: string;
  ipcmode?: string;
  mac_address?: string;
  links: string[];
  /** Services every job of this runner gets, before the job's own. */
  services: ServiceSpec[];
  /** Most services a job may have; negative: no limit. */
  services_limit: number;
  service_memory?: string;
  service_memory_swap?: string;
  service_memory_reservation?: string;
  service_cgroup_parent?: string;
  service_cpuset_cpus?: string;
  service_cpus?: string;
  service_cpu_shares?: number;
  service_gpus?: string;
  /** Seconds to wait for services' ports; default 30, -1 disables the wait. */
  wait_for_services_timeout: number;
  /** Glob lists (GitLab Runner semantics); empty = anything allowed. */
  allowed_images: string[];
  /** Images that may run privileged; empty: any. */
  allowed_privileged_images: string[];
  allowed_privileged_services: string[];
  /** Pull policies a job may use; empty: those of `pull_policy`. */
  allowed_pull_policies: PullPolicy[];
  allowed_services: string[];
  /** Tried in order; a single string in the file becomes a one-element list. Default `['always']`. */
  pull_policy: PullPolicy[];
  /** Bytes. */
  shm_size?: number;
  /** Container path → mount options (`rw,size=64m`). */
  tmpfs: Record<string, string>;
  services_tmpfs: Record<string, string>;
  sysctls: Record<string, string>;
  /** Label → value, the job's variables expanded, on every container of the job. */
  container_labels: Record<string, string>;
  enable_ipv6: boolean;
  /** `soft[:hard]` per limit name. */
  ulimit: Record<string, string>;
  network_mtu?: number;
  /** Log driver options (json-file) of the service containers. */
  log_options: Record<string, string>;
  /** Ours: the docker-compatible CLI to call (default `docker`; e.g. `podman`). */
  cli: string;
}
