/**
 * The `[runners.docker]` table: GitLab Runner's key names and types, normalised into the
 * `DockerOptions` the docker executor reads (a single `pull_policy` string becomes a list, a service
 * string becomes `{ name }`, `wait_for_services_timeout = 0` means GitLab's default of 30 s).
 * DOCKER_KEYS gives every key GitLab Runner has in the table its status (keys.ts).
 */
import { z } from 'zod';
import type { DockerOptions } from '../../executors/docker/options.js';
import { honoured, warned } from '../../util/compat.js';
import { key, keyTable, older, ours } from './keys.js';

const stringList = z.array(z.string().min(1)).default([]);

const pullPolicy = z.enum(['always', 'if-not-present', 'never'], { error: 'one of "always", "if-not-present", "never"' });

/** `/host:/ctr[:mode]`, `volume-name:/ctr[:mode]` or `/ctr` (an anonymous volume). */
const VOLUME = /^(?:(?:\/[^:]*|[A-Za-z0-9][A-Za-z0-9_.-]*):)?\/[^:]*(?::[A-Za-z,]+)?$/;

/** A size as the docker CLI takes it: bytes, or a number with b, k, m or g. */
const SIZE = /^\d+(?:\.\d+)?[bkmgBKMG]?$/;

const sizeString = z
  .union([z.string().regex(SIZE, 'a size such as "512m" or "2g" (b, k, m or g)'), z.int().min(0)])
  .transform((v) => String(v));

/** GitLab's table form of a service (`[[runners.docker.services]]`). */
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
const serviceSchema = z.preprocess((value) => (typeof value === 'string' ? { name: value } : value), serviceTable);

export const dockerSchema = z.strictObject({
  image: z.string().min(1).optional(),
  pull_policy: z
    .union([pullPolicy.transform((p) => [p]), z.array(pullPolicy).min(1, 'at least one policy')], {
      error: 'one of "always", "if-not-present", "never", or a list of them tried in order',
    })
    .default(['always']),
  allowed_images: stringList,
  allowed_services: stringList,
  services: z.array(serviceSchema).default([]),
  /** Seconds; 0 is GitLab Runner's default of 30, -1 disables the wait. */
  wait_for_services_timeout: z
    .int()
    .min(-1, '-1 (no wait) or more seconds')
    .default(30)
    .transform((v) => (v === 0 ? 30 : v)),
  privileged: z.boolean().default(false),
  /** Build stages run as this user (`uid[:gid]` or a name in the image) instead of the image's USER. */
  user: z
    .string()
    .regex(/^[^\s:]*(?::[^\s:]+)?$/, 'a user as docker run --user takes it ("1000", "1000:1000", "node")')
    .transform((v) => (v === '' ? undefined : v))
    .optional(),
  disable_entrypoint_overwrite: z.boolean().default(false),
  volumes: z.array(z.string().regex(VOLUME, 'a "/host/path:/container/path[:ro]" or "/container/path" string')).default([]),
  network_mode: z.string().min(1).optional(),
  memory: sizeString.optional(),
  memory_swap: z.union([sizeString, z.literal(-1).transform(() => '-1')], { error: 'a size such as "1g", or -1 for unlimited swap' }).optional(),
  cpus: z
    .union([z.string().regex(/^\d+(?:\.\d+)?$/, 'a number of CPUs such as "1.5"'), z.number().positive()])
    .transform((v) => String(v))
    .optional(),
  /** Bytes; 0 leaves docker's default (64 MiB). */
  shm_size: z
    .int()
    .min(0)
    .transform((v) => (v === 0 ? undefined : v))
    .optional(),
  dns: stringList,
  extra_hosts: z.array(z.string().regex(/^[^:\s]+:\S+$/, 'a "host:ip" string')).default([]),
  cap_add: stringList,
  cap_drop: stringList,
  devices: stringList,
  tmpfs: z
    .record(z.string().regex(/^\//, 'an absolute container path'), z.string())
    .default({}),
  host: z.string().regex(/^[a-z][a-z0-9+.-]*:\/\//, 'a DOCKER_HOST URL such as "unix:///var/run/docker.sock" or "tcp://10.0.0.2:2376"').optional(),
  disable_cache: z.boolean().default(false),
  cli: z.string().min(1).default('docker'),
});

export type DockerConfig = z.output<typeof dockerSchema>;

// The executor is written against DockerOptions: a schema change that breaks it must not compile.
type Assignable<T extends DockerOptions> = T;
export type DockerConfigIsDockerOptions = Assignable<DockerConfig>;

/** Reason of the keys the docker executor is yet to apply (issue 35). */
const NOT_YET = "ci-runner's docker executor does not apply it yet";

const SERVICE_KEYS = keyTable(serviceTable, {
  name: key(honoured()),
  alias: key(honoured()),
  entrypoint: key(honoured()),
  command: key(honoured()),
  environment: key(warned(NOT_YET)),
});

/** `[runners.docker]`: every key of GitLab Runner 19's, and ours. */
export const DOCKER_KEYS = keyTable(dockerSchema, {
  host: key(honoured()),
  tls_verify: key(warned(NOT_YET)),
  tls_cert_path: key(warned(NOT_YET)),
  hostname: key(warned(NOT_YET)),
  image: key(honoured()),
  runtime: key(warned(NOT_YET)),
  memory: key(honoured()),
  memory_swap: key(honoured()),
  memory_reservation: key(warned(NOT_YET)),
  cgroup_parent: key(warned(NOT_YET)),
  cpuset_cpus: key(warned(NOT_YET)),
  cpuset_mems: key(warned(NOT_YET)),
  cpus: key(honoured()),
  cpu_shares: key(warned(NOT_YET)),
  dns: key(honoured()),
  dns_search: key(warned(NOT_YET)),
  privileged: key(honoured()),
  services_privileged: key(warned(NOT_YET)),
  disable_entrypoint_overwrite: key(honoured()),
  user: key(honoured()),
  allowed_users: key(warned(NOT_YET)),
  group_add: key(warned(NOT_YET)),
  userns_mode: key(warned(NOT_YET)),
  cap_add: key(honoured()),
  cap_drop: key(honoured()),
  oom_kill_disable: key(warned(NOT_YET)),
  oom_score_adjust: key(warned(NOT_YET)),
  security_opt: key(warned(NOT_YET)),
  services_security_opt: key(warned(NOT_YET)),
  devices: key(honoured()),
  device_cgroup_rules: key(warned(NOT_YET)),
  gpus: key(warned(NOT_YET)),
  services_devices: key(warned(NOT_YET)),
  disable_cache: key(warned(NOT_YET)),
  volumes: key(honoured()),
  volume_keep: key(warned(NOT_YET)),
  volume_driver: key(warned(NOT_YET)),
  volume_driver_ops: key(warned(NOT_YET)),
  cache_dir: key(warned(NOT_YET)),
  extra_hosts: key(honoured()),
  volumes_from: key(warned(NOT_YET)),
  network_mode: key(honoured()),
  pid_mode: key(warned(NOT_YET)),
  ipcmode: key(warned(NOT_YET)),
  mac_address: key(warned(NOT_YET)),
  links: key(warned(NOT_YET)),
  services: key(honoured(), SERVICE_KEYS),
  services_limit: key(warned(NOT_YET)),
  service_memory: key(warned(NOT_YET)),
  service_memory_swap: key(warned(NOT_YET)),
  service_memory_reservation: key(warned(NOT_YET)),
  service_cgroup_parent: key(warned(NOT_YET)),
  service_slot_cgroup_template: key(warned(NOT_YET)),
  service_cpuset_cpus: key(warned(NOT_YET)),
  service_cpus: key(warned(NOT_YET)),
  service_cpu_shares: key(warned(NOT_YET)),
  service_gpus: key(warned(NOT_YET)),
  wait_for_services_timeout: key(honoured()),
  allowed_images: key(honoured()),
  allowed_privileged_images: key(warned(NOT_YET)),
  allowed_privileged_services: key(warned(NOT_YET)),
  allowed_pull_policies: key(warned(NOT_YET)),
  allowed_services: key(honoured()),
  pull_policy: key(honoured()),
  isolation: key(warned('Windows containers only; ci-runner runs Linux containers')),
  shm_size: key(honoured()),
  tmpfs: key(honoured()),
  services_tmpfs: key(warned(NOT_YET)),
  sysctls: key(warned(NOT_YET)),
  helper_image: key(warned("ci-runner's docker executor has no helper container: get_sources, artifacts and cache run on the host")),
  helper_image_flavor: key(warned("ci-runner's docker executor has no helper container: get_sources, artifacts and cache run on the host")),
  container_labels: key(warned(NOT_YET)),
  enable_ipv6: key(warned(NOT_YET)),
  ulimit: key(warned(NOT_YET)),
  network_mtu: key(warned(NOT_YET)),
  log_options: key(warned(NOT_YET)),
  image_ttl: older(warned('GitLab Runner 1.0 had it; later versions and ci-runner keep no image age')),
  cli: ours(honoured('the docker-compatible command line to call (`podman` works)')),
});

/** Always present in an entry: `executor = "docker"` without the table gets the defaults. */
export const dockerSection = dockerSchema.prefault({});
