/**
 * Defaults of `[runners.docker]` and the one place the agent reads a runner's docker options. Until the
 * config schema normalises the table, `dockerOptionsOf` accepts the loose table (a single string where
 * a list is expected, services as strings) and fills what is missing.
 */
import type { DockerOptions, PullPolicy, ServiceSpec } from './options.js';

/** GitLab Runner's defaults, plus ours (`cli`). */
export function dockerDefaults(partial: Partial<DockerOptions> = {}): DockerOptions {
  return {
    tls_verify: false,
    pull_policy: ['always'],
    allowed_images: [],
    allowed_services: [],
    allowed_privileged_images: [],
    allowed_privileged_services: [],
    allowed_pull_policies: [],
    allowed_users: [],
    services: [],
    services_limit: -1,
    wait_for_services_timeout: 30,
    privileged: false,
    disable_entrypoint_overwrite: false,
    volumes: [],
    volume_keep: false,
    volume_driver_ops: {},
    volumes_from: [],
    dns: [],
    dns_search: [],
    extra_hosts: [],
    links: [],
    group_add: [],
    cap_add: [],
    cap_drop: [],
    oom_kill_disable: false,
    security_opt: [],
    services_security_opt: [],
    devices: [],
    device_cgroup_rules: [],
    services_devices: {},
    tmpfs: {},
    services_tmpfs: {},
    sysctls: {},
    container_labels: {},
    enable_ipv6: false,
    ulimit: {},
    log_options: {},
    disable_cache: false,
    cli: 'docker',
    ...partial,
  };
}

/** A runner entry's docker options (`runner.docker`), defaults filled in. */
export function dockerOptionsOf(runner: { docker?: Record<string, unknown> | DockerOptions | undefined }): DockerOptions {
  const table = (runner.docker ?? {}) as Record<string, unknown>;
  const list = (value: unknown): string[] | undefined => (value === undefined ? undefined : Array.isArray(value) ? value.map(String) : [String(value)]);
  const partial: Record<string, unknown> = { ...table };
  for (const key of ['allowed_images', 'allowed_services', 'volumes', 'dns', 'extra_hosts', 'cap_add', 'cap_drop', 'devices'] as const) {
    const value = list(table[key]);
    if (value) partial[key] = value;
    else delete partial[key];
  }
  const pull = list(table.pull_policy);
  if (pull) partial.pull_policy = pull as PullPolicy[];
  if (Array.isArray(table.services)) {
    partial.services = table.services.map((s): ServiceSpec => (typeof s === 'string' ? { name: s } : (s as ServiceSpec)));
  }
  return dockerDefaults(partial as Partial<DockerOptions>);
}
