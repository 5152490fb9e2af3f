/**
 * Where this process's cgroup v2 directory is. The v2 hierarchy is the `cgroup2` mount in
 * /proc/self/mountinfo (`/sys/fs/cgroup` on a pure v2 host, `/sys/fs/cgroup/unified` on a hybrid
 * one); the process's place in it is the `0::<path>` line of /proc/self/cgroup. Both paths are
 * relative to the mount's root (the 4th mountinfo field), which differs from `/` when a container
 * bind-mounts only part of the tree.
 */
import { readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';

export interface Cgroup2Mount {
  /** Where the hierarchy is mounted, e.g. /sys/fs/cgroup/unified. */
  mountPoint: string;
  /** Which directory of the hierarchy the mount shows (usually `/`). */
  root: string;
  readOnly: boolean;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The cgroup2 mounts in a /proc/<pid>/mountinfo text, in file order. */
export function parseCgroup2Mounts(mountinfo: string): Cgroup2Mount[] {
  const mounts: Cgroup2Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const separator = line.indexOf(' - ');
    if (separator < 0) continue;
    const before = line.slice(0, separator).split(' ');
    const after = line.slice(separator + 3).split(' ');
    if (after[0] !== 'cgroup2' || before.length < 6) continue;
    const options = (before[5] ?? '').split(',');
    mounts.push({ mountPoint: unescapeMountField(before[4]!), root: unescapeMountField(before[3]!), readOnly: options.includes('ro') });
  }
  return mounts;
}

/** The v2 path (`0::<path>`) in a /proc/<pid>/cgroup text, or undefined on a v1-only host. */
export function parseUnifiedCgroupPath(procCgroup: string): string | undefined {
  for (const line of procCgroup.split('\n')) {
    if (line.startsWith('0::')) return line.slice(3).trim() || '/';
  }
  return undefined;
}

/**
 * The directory of `cgroupPath` under one of `mounts`, or undefined when no mount shows it (the
 * mount is of a different part of the tree than the one this process lives in).
 */
export function cgroupDirectory(mounts: Cgroup2Mount[], cgroupPath: string): { mount: Cgroup2Mount; dir: string } | undefined {
  // A process moved out of its cgroup namespace root shows paths like `/../x`: not ours to manage.
  if (cgroupPath.split('/').includes('..')) return undefined;
  for (const mount of mounts) {
    const root = mount.root === '/' ? '' : mount.root.replace(/\/+$/, '');
    if (root !== '' && cgroupPath !== root && !cgroupPath.startsWith(`${root}/`)) continue;
    return { mount, dir: join(mount.mountPoint, posix.relative(root || '/', cgroupPath)) };
  }
  return undefined;
}

/** This process's cgroup v2 directory, or a sentence saying why there is none. */
export async function ownCgroupDirectory(): Promise<{ dir: string; mount: Cgroup2Mount } | { reason: string }> {
  let mountinfo: string;
  let procCgroup: string;
  try {
    [mountinfo, procCgroup] = await Promise.all([readFile('/proc/self/mountinfo', 'utf8'), readFile('/proc/self/cgroup', 'utf8')]);
  } catch {
    return { reason: 'no /proc/self/mountinfo or /proc/self/cgroup (not Linux?)' };
  }
  const mounts = parseCgroup2Mounts(mountinfo);
  if (mounts.length === 0) return { reason: 'no cgroup v2 hierarchy is mounted' };
  const path = parseUnifiedCgroupPath(procCgroup);
  if (path === undefined) return { reason: 'this process has no cgroup v2 membership' };
  const found = cgroupDirectory(mounts.filter((m) => !m.readOnly), path);
  if (!found) {
    return { reason: mounts.every((m) => m.readOnly) ? `the cgroup v2 hierarchy at ${mounts[0]!.mountPoint} is mounted read-only` : `this process's cgroup ${path} is not under a mounted cgroup v2 tree` };
  }
  return found;
}

/** True when `dir` lies inside a writable cgroup2 mount of this process's mount namespace. */
export async function insideCgroup2Mount(dir: string): Promise<boolean> {
  const mounts = parseCgroup2Mounts(await readFile('/proc/self/mountinfo', 'utf8').catch(() => ''));
  return mounts.some((m) => !m.readOnly && dir.startsWith(`${m.mountPoint.replace(/\/+$/, '')}/`));
}
