/**
 * A small tmpfs, for tests of a full disk: mounting needs root (or CAP_SYS_ADMIN). Where it cannot
 * be mounted the caller skips, and the reason is printed so a skipped test is never silent. In CI
 * (`CI=true`, run as root) a mount that fails is an error: the full-disk tests must run there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export interface Tmpfs {
  dir: string;
  unmount(): Promise<void>;
}

/** Mounts a tmpfs of `sizeMiB` on a fresh temp dir; `{ skip }` with the reason when that fails. */
export async function mountTmpfs(sizeMiB: number): Promise<Tmpfs | { skip: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-tmpfs-'));
  const mounted = await execa('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0755`, 'tmpfs', dir], { reject: false, all: true });
  if (mounted.exitCode !== 0) {
    await rm(dir, { recursive: true, force: true });
    const reason = `cannot mount a tmpfs to fill (${String(mounted.all || mounted.exitCode).trim()})`;
    if (process.env.CI === 'true') throw new Error(`${reason}; CI runs the full-disk tests as root and must not skip them`);
    return { skip: reason };
  }
  return {
    dir,
    async unmount() {
      await execa('umount', ['-l', dir], { reject: false });
      await rm(dir, { recursive: true, force: true });
    },
  };
}
