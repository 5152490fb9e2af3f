/**
 * `[runners.docker]` keys as `docker run` flags, as GitLab Runner 19 applies them: the build container's
 * (each build stage's container here) and the services'. Values go as `--flag=value`, so none can be
 * read as another option. Which container gets what follows GitLab Runner's two host configs: the
 * resource keys without `service_` are the build's, those with it the services'; DNS, extra hosts,
 * runtime, user namespace, shm size, volumes and labels are both's.
 */
import type { DockerOptions } from './options.js';

/** `--flag=value` for each value. */
function each(flags: string[], flag: string, values: readonly string[]): void {
  for (const value of values) flags.push(`${flag}=${value}`);
}

/** `--flag=value` when the value is set. */
function one(flags: string[], flag: string, value: string | number | undefined): void {
  if (value !== undefined) flags.push(`${flag}=${value}`);
}

/** `--tmpfs=PATH[:OPTIONS]` for each mount of a `tmpfs`/`services_tmpfs` table. */
function tmpfs(flags: string[], mounts: Readonly<Record<string, string>>): void {
  for (const [path, mountOptions] of Object.entries(mounts)) flags.push(`--tmpfs=${mountOptions ? `${path}:${mountOptions}` : path}`);
}

/** Both kinds of container: DNS, hosts, runtime, user namespace, shm size. */
function shared(o: DockerOptions, flags: string[]): void {
  each(flags, '--dns', o.dns);
  each(flags, '--dns-search', o.dns_search);
  each(flags, '--add-host', o.extra_hosts);
  one(flags, '--runtime', o.runtime);
  one(flags, '--userns', o.userns_mode);
  if (o.shm_size !== undefined && o.shm_size > 0) one(flags, '--shm-size', o.shm_size);
}

/**
 * The build container's flags. `privileged` is whether this image may run privileged (the caller
 * checks `allowed_privileged_images`); `volumes` are the resolved binds (volumes.ts).
 */
export function containerFlags(o: DockerOptions, options: { privileged?: boolean; volumes?: readonly string[] } = {}): string[] {
  const flags: string[] = [];
  if (options.privileged ?? o.privileged) flags.push('--privileged');
  each(flags, '--volume', options.volumes ?? o.volumes);
  one(flags, '--network', o.network_mode);
  one(flags, '--hostname', o.hostname);
  one(flags, '--memory', o.memory);
  one(flags, '--memory-swap', o.memory_swap);
  one(flags, '--memory-reservation', o.memory_reservation);
  one(flags, '--cgroup-parent', o.cgroup_parent);
  one(flags, '--cpuset-cpus', o.cpuset_cpus);
  one(flags, '--cpuset-mems', o.cpuset_mems);
  one(flags, '--cpus', o.cpus);
  one(flags, '--cpu-shares', o.cpu_shares);
  shared(o, flags);
  each(flags, '--cap-add', o.cap_add);
  each(flags, '--cap-drop', o.cap_drop);
  each(flags, '--group-add', o.group_add);
  if (o.oom_kill_disable) flags.push('--oom-kill-disable');
  one(flags, '--oom-score-adj', o.oom_score_adjust);
  each(flags, '--security-opt', o.security_opt);
  each(flags, '--device', o.devices);
  each(flags, '--device-cgroup-rule', o.device_cgroup_rules);
  one(flags, '--gpus', o.gpus);
  one(flags, '--volume-driver', o.volume_driver);
  each(flags, '--volumes-from', o.volumes_from);
  one(flags, '--pid', o.pid_mode);
  one(flags, '--ipc', o.ipcmode);
  one(flags, '--mac-address', o.mac_address);
  each(flags, '--link', o.links);
  tmpfs(flags, o.tmpfs);
  for (const [name, value] of Object.entries(o.sysctls)) flags.push(`--sysctl=${name}=${value}`);
  for (const [name, limits] of Object.entries(o.ulimit)) flags.push(`--ulimit=${name}=${limits}`);
  return flags;
}

/**
 * A service container's flags: `service_*` resources, `services_*` options, the devices of the
 * `services_devices` globs matching its image (the caller matches), privileged when the caller says
 * (`services_privileged`, else `privileged`, and `allowed_privileged_services`).
 */
export function serviceFlags(o: DockerOptions, options: { privileged: boolean; devices: readonly string[]; volumes: readonly string[] }): string[] {
  const flags: string[] = [];
  if (options.privileged) flags.push('--privileged');
  each(flags, '--volume', options.volumes);
  one(flags, '--memory', o.service_memory);
  one(flags, '--memory-swap', o.service_memory_swap);
  one(flags, '--memory-reservation', o.service_memory_reservation);
  one(flags, '--cgroup-parent', o.service_cgroup_parent);
  one(flags, '--cpuset-cpus', o.service_cpuset_cpus);
  one(flags, '--cpus', o.service_cpus);
  one(flags, '--cpu-shares', o.service_cpu_shares);
  shared(o, flags);
  each(flags, '--security-opt', o.services_security_opt);
  each(flags, '--device', options.devices);
  one(flags, '--gpus', o.service_gpus);
  tmpfs(flags, o.services_tmpfs);
  if (Object.keys(o.log_options).length > 0) {
    flags.push('--log-driver=json-file');
    for (const [name, value] of Object.entries(o.log_options)) flags.push(`--log-opt=${name}=${value}`);
  }
  return flags;
}

/** `docker network create` flags for the network made for a job with services. */
export function networkFlags(o: DockerOptions): string[] {
  const flags: string[] = [];
  if (o.enable_ipv6) flags.push('--ipv6');
  if (o.network_mtu !== undefined) flags.push('--opt', `com.docker.network.driver.mtu=${o.network_mtu}`);
  return flags;
}
