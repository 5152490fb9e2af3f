/**
 * The `--docker-*` flags of `register` and `run-once`, with GitLab Runner's flag and environment
 * names. The table is keyed by `DockerOptions`, so a flag cannot name a key the executor does not
 * read. Values become a raw `[runners.docker]` table: `register` writes it to config.toml and
 * `run-once` parses it with the same schema as the file, so both mean the same as the file does.
 */
import type { Argv } from 'yargs';
import { CiRunnerError } from '../util/errors.js';
import type { DockerOptions } from '../executors/docker/options.js';

type Kind = 'string' | 'list' | 'boolean' | 'number' | 'tmpfs' | 'json';

interface DockerFlag {
  flag: string;
  /** GitLab Runner reads some with no environment name. */
  env?: string;
  kind: Kind;
  describe: string;
}

/** Every key of `[runners.docker]` has its flag (TypeScript checks that none is missing). */
export const DOCKER_FLAGS: { [K in keyof DockerOptions]-?: DockerFlag } = {
  image: { flag: 'docker-image', env: 'DOCKER_IMAGE', kind: 'string', describe: 'Default image for jobs that name none' },
  pull_policy: { flag: 'docker-pull-policy', env: 'DOCKER_PULL_POLICY', kind: 'list', describe: 'always, if-not-present or never; repeat to try several in order (default: always)' },
  allowed_images: { flag: 'docker-allowed-images', env: 'DOCKER_ALLOWED_IMAGES', kind: 'list', describe: 'Glob of images jobs may use (repeatable; none = any)' },
  allowed_services: { flag: 'docker-allowed-services', env: 'DOCKER_ALLOWED_SERVICES', kind: 'list', describe: 'Glob of service images jobs may use (repeatable; none = any)' },
  services: { flag: 'docker-services', env: 'DOCKER_SERVICES', kind: 'list', describe: 'Service image started for every job (repeatable)' },
  wait_for_services_timeout: { flag: 'docker-wait-for-services-timeout', env: 'DOCKER_WAIT_FOR_SERVICES_TIMEOUT', kind: 'number', describe: 'Seconds to wait for services to listen (default 30; -1 = do not wait)' },
  privileged: { flag: 'docker-privileged', env: 'DOCKER_PRIVILEGED', kind: 'boolean', describe: 'Run job containers privileged (gives jobs root on the host)' },
  user: { flag: 'docker-user', env: 'DOCKER_USER', kind: 'string', describe: 'Run build stages as this user (uid[:gid] or a name in the image) instead of the image USER' },
  disable_entrypoint_overwrite: { flag: 'docker-disable-entrypoint-overwrite', env: 'DOCKER_DISABLE_ENTRYPOINT_OVERWRITE', kind: 'boolean', describe: 'Ignore image:entrypoint of jobs; the image ENTRYPOINT always runs' },
  volumes: { flag: 'docker-volumes', env: 'DOCKER_VOLUMES', kind: 'list', describe: 'Volume /host:/ctr[:ro] or /ctr for job containers (repeatable)' },
  network_mode: { flag: 'docker-network-mode', env: 'DOCKER_NETWORK_MODE', kind: 'string', describe: 'Network for job containers (e.g. host)' },
  memory: { flag: 'docker-memory', env: 'DOCKER_MEMORY', kind: 'string', describe: 'Memory limit (e.g. 512m, 2g)' },
  memory_swap: { flag: 'docker-memory-swap', env: 'DOCKER_MEMORY_SWAP', kind: 'string', describe: 'Memory + swap limit (e.g. 1g)' },
  cpus: { flag: 'docker-cpus', env: 'DOCKER_CPUS', kind: 'string', describe: 'Number of CPUs (e.g. 1.5)' },
  shm_size: { flag: 'docker-shm-size', env: 'DOCKER_SHM_SIZE', kind: 'number', describe: 'Size of /dev/shm in bytes' },
  dns: { flag: 'docker-dns', env: 'DOCKER_DNS', kind: 'list', describe: 'DNS server for job containers (repeatable)' },
  extra_hosts: { flag: 'docker-extra-hosts', env: 'DOCKER_EXTRA_HOSTS', kind: 'list', describe: 'host:ip entry for /etc/hosts (repeatable)' },
  cap_add: { flag: 'docker-cap-add', env: 'DOCKER_CAP_ADD', kind: 'list', describe: 'Linux capability to add (repeatable)' },
  cap_drop: { flag: 'docker-cap-drop', env: 'DOCKER_CAP_DROP', kind: 'list', describe: 'Linux capability to drop (repeatable)' },
  devices: { flag: 'docker-devices', env: 'DOCKER_DEVICES', kind: 'list', describe: 'Host device for job containers (repeatable)' },
  tmpfs: { flag: 'docker-tmpfs', env: 'DOCKER_TMPFS', kind: 'tmpfs', describe: 'tmpfs mount /ctr:options, or a JSON object {"/ctr":"options"} (repeatable)' },
  host: { flag: 'docker-host', env: 'DOCKER_HOST', kind: 'string', describe: 'Docker engine address (unix:///..., tcp://...)' },
  disable_cache: { flag: 'docker-disable-cache', env: 'DOCKER_DISABLE_CACHE', kind: 'boolean', describe: 'Do not restore or save the cache of jobs' },
  tls_verify: { flag: 'docker-tlsverify', env: 'DOCKER_TLS_VERIFY', kind: 'boolean', describe: 'Use TLS to the engine and verify it' },
  tls_cert_path: { flag: 'docker-cert-path', env: 'DOCKER_CERT_PATH', kind: 'string', describe: 'Directory of ca.pem, cert.pem and key.pem for the engine' },
  hostname: { flag: 'docker-hostname', env: 'DOCKER_HOSTNAME', kind: 'string', describe: 'Host name of the build container' },
  runtime: { flag: 'docker-runtime', env: 'DOCKER_RUNTIME', kind: 'string', describe: 'Container runtime (e.g. runc, nvidia)' },
  memory_reservation: { flag: 'docker-memory-reservation', env: 'DOCKER_MEMORY_RESERVATION', kind: 'string', describe: 'Memory soft limit (e.g. 256m)' },
  cgroup_parent: { flag: 'docker-cgroup-parent', env: 'DOCKER_CGROUP_PARENT', kind: 'string', describe: 'Parent cgroup of the build container' },
  cpuset_cpus: { flag: 'docker-cpuset-cpus', env: 'DOCKER_CPUSET_CPUS', kind: 'string', describe: 'CPUs the build container may use (e.g. 0-3)' },
  cpuset_mems: { flag: 'docker-cpuset-mems', env: 'DOCKER_CPUSET_MEMS', kind: 'string', describe: 'Memory nodes the build container may use (e.g. 0,1)' },
  cpu_shares: { flag: 'docker-cpu-shares', env: 'DOCKER_CPU_SHARES', kind: 'number', describe: 'Relative CPU weight of the build container' },
  dns_search: { flag: 'docker-dns-search', env: 'DOCKER_DNS_SEARCH', kind: 'list', describe: 'DNS search domain (repeatable)' },
  services_privileged: { flag: 'docker-services_privileged', env: 'DOCKER_SERVICES_PRIVILEGED', kind: 'boolean', describe: 'Run services privileged or not (default: as the build)' },
  allowed_users: { flag: 'docker-allowed_users', env: 'DOCKER_ALLOWED_USERS', kind: 'list', describe: 'User the build may run as (repeatable; none = any, or only the docker user when set)' },
  group_add: { flag: 'docker-group-add', env: 'DOCKER_GROUP_ADD', kind: 'list', describe: 'Extra group of the build container (repeatable)' },
  userns_mode: { flag: 'docker-userns', env: 'DOCKER_USERNS_MODE', kind: 'string', describe: 'User namespace mode (e.g. host)' },
  oom_kill_disable: { flag: 'docker-oom-kill-disable', env: 'DOCKER_OOM_KILL_DISABLE', kind: 'boolean', describe: 'Do not kill the build container when it runs out of memory' },
  oom_score_adjust: { flag: 'docker-oom-score-adjust', env: 'DOCKER_OOM_SCORE_ADJUST', kind: 'number', describe: 'OOM score adjustment (-1000 to 1000)' },
  security_opt: { flag: 'docker-security-opt', env: 'DOCKER_SECURITY_OPT', kind: 'list', describe: 'Security option of the build container (repeatable)' },
  services_security_opt: { flag: 'docker-services-security-opt', env: 'DOCKER_SERVICES_SECURITY_OPT', kind: 'list', describe: 'Security option of services (repeatable)' },
  device_cgroup_rules: { flag: 'docker-device-cgroup-rules', env: 'DOCKER_DEVICE_CGROUP_RULES', kind: 'list', describe: 'Device cgroup rule of the build container (repeatable)' },
  gpus: { flag: 'docker-gpus', env: 'DOCKER_GPUS', kind: 'string', describe: 'GPUs of the build container (e.g. all)' },
  services_devices: { flag: 'docker-services_devices', env: 'DOCKER_SERVICES_DEVICES', kind: 'json', describe: 'Devices of services by image glob, a JSON object {"glob":["/dev/x"]}' },
  volume_keep: { flag: 'docker-volume-keep', env: 'DOCKER_VOLUME_KEEP', kind: 'boolean', describe: 'Keep volumes when the job\'s containers are removed' },
  volume_driver: { flag: 'docker-volume-driver', env: 'DOCKER_VOLUME_DRIVER', kind: 'string', describe: 'Volume driver' },
  volume_driver_ops: { flag: 'docker-volume-driver-ops', env: 'DOCKER_VOLUME_DRIVER_OPS', kind: 'tmpfs', describe: 'Options of the volumes made for jobs, key:value or a JSON object (repeatable)' },
  cache_dir: { flag: 'docker-cache-dir', env: 'DOCKER_CACHE_DIR', kind: 'string', describe: 'Host directory for container-path volumes instead of docker volumes' },
  volumes_from: { flag: 'docker-volumes-from', env: 'DOCKER_VOLUMES_FROM', kind: 'list', describe: 'Container whose volumes the build container gets (repeatable)' },
  pid_mode: { flag: 'docker-pid-mode', env: 'DOCKER_PID_MODE', kind: 'string', describe: 'PID namespace of the build container (e.g. host)' },
  ipcmode: { flag: 'docker-ipcmode', env: 'DOCKER_IPC_MODE', kind: 'string', describe: 'IPC mode of the build container' },
  mac_address: { flag: 'docker-mac-address', env: 'DOCKER_MAC_ADDRESS', kind: 'string', describe: 'MAC address of the build container' },
  links: { flag: 'docker-links', env: 'DOCKER_LINKS', kind: 'list', describe: 'Container to link to the build container (repeatable)' },
  services_limit: { flag: 'docker-services-limit', env: 'DOCKER_SERVICES_LIMIT', kind: 'number', describe: 'Most services a job may have (default: no limit)' },
  service_memory: { flag: 'docker-service-memory', env: 'DOCKER_SERVICE_MEMORY', kind: 'string', describe: 'Memory limit of each service' },
  service_memory_swap: { flag: 'docker-service-memory-swap', env: 'DOCKER_SERVICE_MEMORY_SWAP', kind: 'string', describe: 'Memory + swap limit of each service' },
  service_memory_reservation: { flag: 'docker-service-memory-reservation', env: 'DOCKER_SERVICE_MEMORY_RESERVATION', kind: 'string', describe: 'Memory soft limit of each service' },
  service_cgroup_parent: { flag: 'docker-service-cgroup-parent', env: 'DOCKER_SERVICE_CGROUP_PARENT', kind: 'string', describe: 'Parent cgroup of services' },
  service_cpuset_cpus: { flag: 'docker-service-cpuset-cpus', env: 'DOCKER_SERVICE_CPUSET_CPUS', kind: 'string', describe: 'CPUs services may use' },
  service_cpus: { flag: 'docker-service-cpus', env: 'DOCKER_SERVICE_CPUS', kind: 'string', describe: 'Number of CPUs of each service' },
  service_cpu_shares: { flag: 'docker-service-cpu-shares', env: 'DOCKER_SERVICE_CPU_SHARES', kind: 'number', describe: 'Relative CPU weight of services' },
  service_gpus: { flag: 'docker-service_gpus', env: 'DOCKER_SERVICE_GPUS', kind: 'string', describe: 'GPUs of services' },
  allowed_privileged_images: { flag: 'docker-allowed-privileged-images', env: 'DOCKER_ALLOWED_PRIVILEGED_IMAGES', kind: 'list', describe: 'Glob of images that may run privileged (repeatable; none = any)' },
  allowed_privileged_services: { flag: 'docker-allowed-privileged-services', env: 'DOCKER_ALLOWED_PRIVILEGED_SERVICES', kind: 'list', describe: 'Glob of service images that may run privileged (repeatable; none = any)' },
  allowed_pull_policies: { flag: 'docker-allowed-pull-policies', env: 'DOCKER_ALLOWED_PULL_POLICIES', kind: 'list', describe: 'Pull policy jobs may use (repeatable; none = the pull policies of the runner)' },
  services_tmpfs: { flag: 'docker-services-tmpfs', env: 'DOCKER_SERVICES_TMPFS', kind: 'tmpfs', describe: 'tmpfs mount of services, /ctr:options or a JSON object (repeatable)' },
  sysctls: { flag: 'docker-sysctls', env: 'DOCKER_SYSCTLS', kind: 'tmpfs', describe: 'sysctl of the build container, name:value or a JSON object (repeatable)' },
  container_labels: { flag: 'docker-container-labels', kind: 'tmpfs', describe: 'Label of every container of a job, name:value or a JSON object (repeatable)' },
  enable_ipv6: { flag: 'docker-enable-ipv6', kind: 'boolean', describe: 'IPv6 on the network made for a job with services' },
  ulimit: { flag: 'docker-ulimit', env: 'DOCKER_ULIMIT', kind: 'tmpfs', describe: 'ulimit of the build container, name:soft[:hard] or a JSON object (repeatable)' },
  network_mtu: { flag: 'docker-network-mtu', kind: 'number', describe: 'MTU of the network made for a job with services' },
  log_options: { flag: 'docker-log-options', env: 'DOCKER_LOG_OPTIONS', kind: 'tmpfs', describe: 'json-file log option of services, name:value or a JSON object (repeatable)' },
  cli: { flag: 'docker-cli', env: 'DOCKER_CLI', kind: 'string', describe: 'Docker-compatible CLI to call (default: docker; e.g. podman)' },
};

const entries = Object.entries(DOCKER_FLAGS) as Array<[keyof DockerOptions, DockerFlag]>;

/** Adds the `--docker-*` options to a command, in a "Docker executor" group. */
export function addDockerFlags<T>(y: Argv<T>): Argv<T> {
  // Naming the default group first keeps the command's own options above the docker ones.
  let out = y.group([], 'Options:');
  for (const [, f] of entries) {
    const split = f.kind === 'list' ? ', comma-separated' : f.kind === 'tmpfs' || f.kind === 'json' ? ', as JSON' : '';
    const type = f.kind === 'boolean' ? 'boolean' : f.kind === 'number' ? 'number' : 'string';
    out = out.option(f.flag, { type, array: f.kind === 'list' || f.kind === 'tmpfs', describe: `${f.describe}${f.env ? ` [env: ${f.env}${split}]` : ''}`, group: 'Docker executor:' });
  }
  return out;
}

/** An unusable flag value, named as the user wrote it; the CLI exits with 2 (usage). */
export class DockerFlagError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('DOCKER_FLAG_INVALID', message);
  }
}

/**
 * The raw `[runners.docker]` table from flags, then environment variables; keys with no value are
 * left out (so the schema's defaults apply). List values from the environment are comma-separated.
 */
export function dockerTableFromFlags(argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  for (const [key, f] of entries) {
    const value = flagValue(argv[f.flag], f.env ? env[f.env] : undefined, f);
    if (value !== undefined) table[key] = value;
  }
  return table;
}

function flagValue(fromFlag: unknown, fromEnv: string | undefined, f: DockerFlag): unknown {
  const given = fromFlag !== undefined && !(Array.isArray(fromFlag) && fromFlag.length === 0);
  const envSet = fromEnv !== undefined && fromEnv !== '';
  if (!given && !envSet) return undefined;
  switch (f.kind) {
    case 'boolean':
      return given ? Boolean(fromFlag) : /^(1|true|yes|on)$/i.test(fromEnv ?? '');
    case 'number': {
      const n = given ? Number(fromFlag) : Number(fromEnv);
      // yargs has already turned a non-number flag value into NaN: only the environment's text is left.
      if (!Number.isFinite(n)) throw new DockerFlagError(`--${f.flag}: expects a number${given ? '' : ` (${f.env}="${fromEnv ?? ''}")`}`);
      return n;
    }
    case 'string':
      return String(given ? fromFlag : fromEnv);
    case 'list':
      return given ? (fromFlag as unknown[]).map(String) : splitList(fromEnv ?? '');
    case 'tmpfs':
      return tmpfsTable(given ? (fromFlag as unknown[]).map(String) : [fromEnv ?? ''], f);
    case 'json':
      return jsonObject(String(given ? fromFlag : fromEnv), f);
  }
}

function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** GitLab Runner's JSON object form of a table (the schema checks its values). */
function jsonObject(text: string, f: DockerFlag): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new DockerFlagError(`--${f.flag}: not a JSON object: ${text}`);
  return parsed as Record<string, unknown>;
}

/** `/ctr:opts` items or GitLab Runner's JSON object form, merged. */
function tmpfsTable(items: string[], f: DockerFlag): Record<string, string> {
  const table: Record<string, string> = {};
  const json = items.join(',').trim();
  if (json.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      throw new DockerFlagError(`--${f.flag}: not a JSON object: ${json}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new DockerFlagError(`--${f.flag}: not a JSON object: ${json}`);
    for (const [path, options] of Object.entries(parsed)) table[path] = String(options);
    return table;
  }
  for (const item of items) {
    const colon = item.indexOf(':');
    table[colon === -1 ? item : item.slice(0, colon)] = colon === -1 ? '' : item.slice(colon + 1);
  }
  return table;
}

/** `docker.pull_policy.0` → `--docker-pull-policy`, for messages about a parsed table. */
export function flagOfKey(key: string): string {
  const f = DOCKER_FLAGS[key as keyof DockerOptions] as DockerFlag | undefined;
  return f ? `--${f.flag}` : key;
}
