/**
 * Processes of the job user that can still reach into a directory the daemon is taking back. Closing
 * the checkout (root's, 0700) stops anyone from entering it by path, but not a process already inside:
 * one whose working directory (or root, or an open file or directory) is there keeps using paths
 * relative to it, and could swap a file the daemon is about to read or write for a link. Job processes
 * are normally gone by then (cgroup, else process group and marker sweep); this catches one that
 * slipped out of both. Linux /proc; without it (or a process gone meanwhile) nothing is found.
 */
import { readdir, readlink, stat } from 'node:fs/promises';
import { sep } from 'node:path';

/** Pids of `uid`'s processes whose cwd, root or an open descriptor is `dir` or below it. */
export async function processesInside(uid: number, dir: string): Promise<number[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const inside = (target: string): boolean => target === dir || target.startsWith(`${dir}${sep}`);
  const found = await Promise.all(
    entries.filter((entry) => /^\d+$/.test(entry)).map(async (entry) => {
      const base = `/proc/${entry}`;
      // /proc/<pid> belongs to the process's effective uid.
      if ((await stat(base).catch(() => undefined))?.uid !== uid) return undefined;
      const fds = await readdir(`${base}/fd`).catch(() => [] as string[]);
      const links = ['cwd', 'root', ...fds.map((fd) => `fd/${fd}`)];
      for (const link of links) {
        const target = await readlink(`${base}/${link}`).catch(() => '');
        if (inside(target)) return Number(entry);
      }
      return undefined;
    }),
  );
  return found.filter((pid): pid is number => pid !== undefined);
}
