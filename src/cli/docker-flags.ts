/**
 * The `--docker-*` flags of `register` and `run-once`, with GitLab Runner's flag and environment
 * names. The table is keyed by `DockerOptions`, so a flag cannot name a key the executor does not
 * read. Values become a raw `[runners.docker]` table: `register` writes it to config.toml and
 * `run-once` parses it with the same schema as the file, so both mean the same as the file does.
 */
import type { Argv } from 'yargs';
import { CiRunnerError } from '../util/errors.js';
import type { DockerOptions } from '../executors/docker/options.js';

type Kind = 'string' | 'list' | 'boolean' | 'number' | 'tmpfs';

interface DockerFlag {
  flag: string;
  env: string;
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
  cli: { flag: 'docker-cli', env: 'DOCKER_CLI', kind: 'string', describe: 'Docker-compatible CLI to call (default: docker; e.g. podman)' },
};

const entries = Object.entries(DOCKER_FLAGS) as Array<[keyof DockerOptions, DockerFlag]>;

/** Adds the `--docker-*` options to a command, in a "Docker executor" group. */
export function addDockerFlags<T>(y: Argv<T>): Argv<T> {
  // Naming the default group first keeps the command's own options above the docker ones.
  let out = y.group([], 'Options:');
  for (const [, f] of entries) {
    const split = f.kind === 'list' ? ', comma-separated' : f.kind === 'tmpfs' ? ', as JSON' : '';
    const type = f.kind === 'boolean' ? 'boolean' : f.kind === 'number' ? 'number' : 'string';
    out = out.option(f.flag, { type, array: f.kind === 'list' || f.kind === 'tmpfs', describe: `${f.describe} [env: ${f.env}${split}]`, group: 'Docker executor:' });
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
    const value = flagValue(argv[f.flag], env[f.env], f);
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
  }
}

function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
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
