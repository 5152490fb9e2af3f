/**
 * The `[runners.docker]` table: GitLab Runner's key names and types, normalised into the
 * `DockerOptions` the docker executor reads (a single `pull_policy` string becomes a list, a service
 * string becomes `{ name }`, `wait_for_services_timeout = 0` means GitLab's default of 30 s).
 * DOCKER_KEYS gives every key GitLab Runner has in the table its status (keys.ts).
 */
import { z } from 'zod';
import type { DockerOptions } from '../../executors/docker/options.js';
import { honoured, warned } from '../../util/compat.js';
import {
  cpuCount, cpuSet, optionalInt, optionalString, pullPolicy, serviceSchema, serviceTable, sizeString, stringList, stringMap, swapSize, tmpfsTable, ulimitTable, volumeList,
} from './docker-values.js';
import { key, keyTable, older, ours } from './keys.js';

export const dockerSchema = z.strictObject({
  host: z.string().regex(/^[a-z][a-z0-9+.-]*:\/\//, 'a DOCKER_HOST URL such as "unix:///var/run/docker.sock" or "tcp://10.0.0.2:2376"').optional(),
  tls_verify: z.boolean().default(false),
  tls_cert_path: optionalString,
  hostname: z
    .string()
    .regex(/^(?:[A-Za-z0-9][A-Za-z0-9.-]*)?$/, 'a host name')
    .transform((v) => (v === '' ? undefined : v))
    .optional(),
  image: z.string().min(1).optional(),
  runtime: optionalString,
  memory: sizeString,
  memory_swap: swapSize,
  memory_reservation: sizeString,
  cgroup_parent: optionalString,
  cpuset_cpus: cpuSet,
  cpuset_mems: cpuSet,
  cpus: cpuCount,
  cpu_shares: optionalInt(0, 262144),
  dns: stringList,
  dns_search: stringList,
  privileged: z.boolean().default(false),
  /** Unset: services are privileged as `privileged` says. */
  services_privileged: z.boolean().optional(),
  disable_entrypoint_overwrite: z.boolean().default(false),
  /** Build stages run as this user (`uid[:gid]` or a name in the image) instead of the image's USER. */
  user: z
    .string()
    .regex(/^[^\s:]*(?::[^\s:]+)?$/, 'a user as docker run --user takes it ("1000", "1000:1000", "node")')
    .transform((v) => (v === '' ? undefined : v))
    .optional(),
  allowed_users: stringList,
  group_add: stringList,
  userns_mode: optionalString,
  cap_add: stringList,
  cap_drop: stringList,
  oom_kill_disable: z.boolean().default(false),
  oom_score_adjust: optionalInt(-1000, 1000),
  security_opt: stringList,
  services_security_opt: stringList,
  devices: stringList,
  device_cgroup_rules: stringList,
  gpus: optionalString,
  /** Image glob → devices for the services it matches. */
  services_devices: z.record(z.string().min(1), z.array(z.string().min(1))).default({}),
  disable_cache: z.boolean().default(false),
  volumes: volumeList,
  volume_keep: z.boolean().default(false),
  volume_driver: optionalString,
  volume_driver_ops: stringMap,
  /** Host directory for the container-path-only volumes, instead of docker volumes. */
  cache_dir: z
    .string()
    .regex(/^(?:\/.*)?$/, 'an absolute path on this host')
    .transform((v) => (v === '' ? undefined : v))
    .optional(),
  extra_hosts: z.array(z.string().regex(/^[^:\s]+:\S+$/, 'a "host:ip" string')).default([]),
  volumes_from: stringList,
  network_mode: z.string().min(1).optional(),
  pid_mode: optionalString,
  ipcmode: optionalString,
  mac_address: z
    .string()
    .regex(/^(?:[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5})?$/, 'a MAC address such as "92:d0:c6:0a:29:33"')
    .transform((v) => (v === '' ? undefined : v))
    .optional(),
  links: stringList,
  services: z.array(serviceSchema).default([]),
  /** Most services a job may have (the runner's and its own); negative: no limit. */
  services_limit: z.int().default(-1),
  service_memory: sizeString,
  service_memory_swap: swapSize,
  service_memory_reservation: sizeString,
  service_cgroup_parent: optionalString,
  service_cpuset_cpus: cpuSet,
  service_cpus: cpuCount,
  service_cpu_shares: optionalInt(0, 262144),
  service_gpus: optionalString,
  /** Seconds; 0 is GitLab Runner's default of 30, -1 disables the wait. */
  wait_for_services_timeout: z
    .int()
    .min(-1, '-1 (no wait) or more seconds')
    .default(30)
    .transform((v) => (v === 0 ? 30 : v)),
  allowed_images: stringList,
  allowed_privileged_images: stringList,
  allowed_privileged_services: stringList,
  allowed_pull_policies: z.array(pullPolicy).default([]),
  allowed_services: stringList,
  pull_policy: z
    .union([pullPolicy.transform((p) => [p]), z.array(pullPolicy).min(1, 'at least one policy')], {
      error: 'one of "always", "if-not-present", "never", or a list of them tried in order',
    })
    .default(['always']),
  /** Bytes; 0 leaves docker's default (64 MiB). */
  shm_size: z
    .int()
    .min(0)
    .transform((v) => (v === 0 ? undefined : v))
    .optional(),
  tmpfs: tmpfsTable,
  services_tmpfs: tmpfsTable,
  sysctls: stringMap,
  /** Label name → value (the job's variables expanded) on every container of the job. */
  container_labels: stringMap,
  enable_ipv6: z.boolean().default(false),
  ulimit: ulimitTable,
  /** MTU of the network made for a job with services; 0 leaves docker's. */
  network_mtu: optionalInt(0, 65535),
  log_options: stringMap,
  cli: z.string().min(1).default('docker'),
});

export type DockerConfig = z.output<typeof dockerSchema>;

// The executor is written against DockerOptions: a schema change that breaks it must not compile.
type Assignable<T extends DockerOptions> = T;
export type DockerConfigIsDockerOptions = Assignable<DockerConfig>;

const NO_HELPER = "ci-runner's docker executor has no helper container: get_sources, artifacts and cache run on the host";

const SERVICE_KEYS = keyTable(serviceTable, {
  name: key(honoured()),
  alias: key(honoured()),
  entrypoint: key(honoured()),
  command: key(honoured()),
  environment: key(honoured('given to that service only, after the job\'s variables')),
});

/** `[runners.docker]`: every key of GitLab Runner 19's, and ours. Where each becomes a flag: create-args.ts. */
export const DOCKER_KEYS = keyTable(dockerSchema, {
  host: key(honoured()),
  tls_verify: key(honoured('DOCKER_TLS_VERIFY for the docker CLI')),
  tls_cert_path: key(honoured('DOCKER_CERT_PATH for the docker CLI')),
  hostname: key(honoured()),
  image: key(honoured()),
  runtime: key(honoured()),
  memory: key(honoured()),
  memory_swap: key(honoured()),
  memory_reservation: key(honoured()),
  cgroup_parent: key(honoured()),
  cpuset_cpus: key(honoured()),
  cpuset_mems: key(honoured()),
  cpus: key(honoured()),
  cpu_shares: key(honoured()),
  dns: key(honoured()),
  dns_search: key(honoured()),
  privileged: key(honoured('for the images allowed_privileged_images allows')),
  services_privileged: key(honoured()),
  disable_entrypoint_overwrite: key(honoured()),
  user: key(honoured()),
  allowed_users: key(honoured('jobs cannot name a user here (image:docker:user is not read), so it checks [runners.docker] user')),
  group_add: key(honoured()),
  userns_mode: key(honoured()),
  cap_add: key(honoured()),
  cap_drop: key(honoured()),
  oom_kill_disable: key(honoured()),
  oom_score_adjust: key(honoured()),
  security_opt: key(honoured()),
  services_security_opt: key(honoured()),
  devices: key(honoured()),
  device_cgroup_rules: key(honoured()),
  gpus: key(honoured()),
  services_devices: key(honoured()),
  disable_cache: key(honoured('a container-path volume lives for the job only')),
  volumes: key(honoured('a container path alone is a volume of the project, kept from job to job')),
  volume_keep: key(honoured()),
  volume_driver: key(honoured('for the build containers and the volumes the executor creates')),
  volume_driver_ops: key(honoured()),
  cache_dir: key(honoured()),
  extra_hosts: key(honoured()),
  volumes_from: key(honoured()),
  network_mode: key(honoured()),
  pid_mode: key(honoured()),
  ipcmode: key(honoured()),
  mac_address: key(honoured()),
  links: key(honoured()),
  services: key(honoured(), SERVICE_KEYS),
  services_limit: key(honoured()),
  service_memory: key(honoured()),
  service_memory_swap: key(honoured()),
  service_memory_reservation: key(honoured()),
  service_cgroup_parent: key(honoured()),
  service_slot_cgroup_template: key(warned('only the docker-autoscaler and instance executors have slot cgroups, and ci-runner has neither')),
  service_cpuset_cpus: key(honoured()),
  service_cpus: key(honoured()),
  service_cpu_shares: key(honoured()),
  service_gpus: key(honoured()),
  wait_for_services_timeout: key(honoured()),
  allowed_images: key(honoured()),
  allowed_privileged_images: key(honoured()),
  allowed_privileged_services: key(honoured()),
  allowed_pull_policies: key(honoured()),
  allowed_services: key(honoured()),
  pull_policy: key(honoured()),
  isolation: key(warned('Windows containers only; ci-runner runs Linux containers')),
  shm_size: key(honoured()),
  tmpfs: key(honoured()),
  services_tmpfs: key(honoured()),
  sysctls: key(honoured()),
  helper_image: key(warned(NO_HELPER)),
  helper_image_flavor: key(warned(NO_HELPER)),
  container_labels: key(honoured()),
  enable_ipv6: key(honoured('on the network made for a job with services')),
  ulimit: key(honoured()),
  network_mtu: key(honoured('of the network made for a job with services')),
  log_options: key(honoured('json-file options of the service containers; build stages log to the job log only (--log-driver none)')),
  image_ttl: older(warned('GitLab Runner 1.0 had it; later versions and ci-runner keep no image age')),
  cli: ours(honoured('the docker-compatible command line to call (`podman` works)')),
});

/** Always present in an entry: `executor = "docker"` without the table gets the defaults. */
export const dockerSection = dockerSchema.prefault({});
