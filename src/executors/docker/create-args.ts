/** `[runners.docker]` keys as `docker run` flags (the build container; services get `privileged` only). */
import type { DockerOptions } from './options.js';

export function containerFlags(o: DockerOptions): string[] {
  const flags: string[] = [];
  const each = (flag: string, values: readonly string[]): void => {
    for (const value of values) flags.push(flag, value);
  };
  if (o.privileged) flags.push('--privileged');
  each('--volume', o.volumes);
  if (o.network_mode) flags.push('--network', o.network_mode);
  if (o.memory) flags.push('--memory', o.memory);
  if (o.memory_swap) flags.push('--memory-swap', o.memory_swap);
  if (o.cpus) flags.push('--cpus', o.cpus);
  if (o.shm_size !== undefined && o.shm_size > 0) flags.push('--shm-size', String(o.shm_size));
  each('--dns', o.dns);
  each('--add-host', o.extra_hosts);
  each('--cap-add', o.cap_add);
  each('--cap-drop', o.cap_drop);
  each('--device', o.devices);
  for (const [path, mountOptions] of Object.entries(o.tmpfs)) flags.push('--tmpfs', mountOptions ? `${path}:${mountOptions}` : path);
  return flags;
}
