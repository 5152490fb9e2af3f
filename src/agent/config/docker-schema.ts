/**
 * The `[runners.docker]` table: GitLab Runner's key names and types, normalised into the
 * `DockerOptions` the docker executor reads (a single `pull_policy` string becomes a list, a service
 * string becomes `{ name }`, `wait_for_services_timeout = 0` means GitLab's default of 30 s).
 * GitLab Runner docker keys we do not use are listed apart: they produce a warning naming them,
 * any other unknown key is an error with a suggestion (see load.ts).
 */
import { z } from 'zod';
import type { DockerOptions } from '../../executors/docker/options.js';
import type { RunnerSection } from './section.js';

const stringList = z.array(z.string().min(1)).default([]);

const pullPolicy = z.enum(['always', 'if-not-present', 'never'], { error: 'one of "always", "if-not-present", "never"' });

/** `/host:/ctr[:mode]`, `volume-name:/ctr[:mode]` or `/ctr` (an anonymous volume). */
const VOLUME = /^(?:(?:\/[^:]*|[A-Za-z0-9][A-Za-z0-9_.-]*):)?\/[^:]*(?::[A-Za-z,]+)?$/;

/** A size as the docker CLI takes it: bytes, or a number with b, k, m or g. */
const SIZE = /^\d+(?:\.\d+)?[bkmgBKMG]?$/;

const sizeString = z
  .union([z.string().regex(SIZE, 'a size such as "512m" or "2g" (b, k, m or g)'), z.int().min(0)])
  .transform((v) => String(v));

/** GitLab's table form of a service; a plain string is shorthand for `{ name }`. */
const serviceSchema = z.preprocess(
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

/** GitLab Runner `[runners.docker]` keys with no effect here: a warning names them. */
export const IGNORED_DOCKER_KEYS = new Set([
  'tls_verify', 'tls_cert_path', 'hostname', 'runtime', 'memory_reservation', 'cpuset_cpus', 'cpu_shares',
  'dns_search', 'services_privileged', 'userns_mode', 'oom_kill_disable',
  'oom_score_adjust', 'security_opt', 'services_security_opt', 'device_cgroup_rules', 'gpus', 'volume_driver',
  'volume_driver_ops', 'cache_dir', 'volumes_from', 'ipcmode', 'mac_address', 'links', 'allowed_pull_policies',
  'allowed_privileged_images', 'allowed_privileged_services', 'allowed_users', 'isolation', 'services_tmpfs',
  'sysctls', 'helper_image', 'helper_image_flavor', 'helper_image_autoset_arch_and_os', 'container_labels',
  'enable_ipv6', 'network_mtu', 'image_ttl', 'ulimit', 'log_options', 'cgroup_parent', 'cpuset_mems',
  'service_cpus', 'service_cpu_shares', 'service_cpuset_cpus', 'service_memory', 'service_memory_swap',
  'service_memory_reservation', 'service_cgroup_parent', 'service_gpus', 'services_devices', 'group_add',
]);

export const KNOWN_DOCKER_KEYS = Object.keys(dockerSchema.shape);

/** Always present in an entry: `executor = "docker"` without the table gets the defaults. */
export const dockerSection = {
  key: 'docker',
  schema: dockerSchema.prefault({}),
  keys: { known: KNOWN_DOCKER_KEYS, ignored: IGNORED_DOCKER_KEYS },
} as const satisfies RunnerSection;
