/**
 * Emptying one cgroup v2 directory. `cgroup.kill` (Linux 5.14) SIGKILLs every member atomically, so a
 * forking process cannot slip out. Older kernels: freeze the cgroup (5.2) so nothing in it can fork,
 * SIGKILL each pid in `cgroup.procs` (a frozen process still dies of SIGKILL), thaw, and repeat until
 * it is empty. Without a freezer the same loop runs unfrozen, which a fork bomb can outpace for a
 * while, but never escape: its children are born in the same cgroup.
 */
import { access, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type KillMethod = 'cgroup.kill' | 'freeze' | 'signal';

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How this kernel can kill the members of `dir` (a non-root cgroup). */
export async function killMethodOf(dir: string): Promise<KillMethod> {
  if (await access(join(dir, 'cgroup.kill')).then(() => true, () => false)) return 'cgroup.kill';
  if (await access(join(dir, 'cgroup.freeze')).then(() => true, () => false)) return 'freeze';
  return 'signal';
}

async function events(dir: string): Promise<Map<string, string>> {
  const text = await readFile(join(dir, 'cgroup.events'), 'utf8');
  return new Map(text.split('\n').filter(Boolean).map((line) => line.split(' ') as [string, string]));
}

/**
 * True while a live process is in `dir` or below. Zombies do not count (the kernel drops them from the
 * cgroup at exit). A cgroup that no longer exists is empty.
 */
export async function isPopulated(dir: string): Promise<boolean> {
  try {
    return (await events(dir)).get('populated') === '1';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** Pids in `dir` itself (not its children). */
export async function listProcs(dir: string): Promise<number[]> {
  const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number).filter((pid) => Number.isInteger(pid) && pid > 0);
}

/** Sends `signal` to every process in `dir`; the number signalled. */
export async function signalProcs(dir: string, signal: NodeJS.Signals): Promise<number> {
  let sent = 0;
  for (const pid of await listProcs(dir)) {
    try {
      process.kill(pid, signal);
      sent += 1;
    } catch {
      // exited meanwhile
    }
  }
  return sent;
}

/** Waits up to `ms` for `dir` to hold no live process; true when it is empty. */
export async function waitEmpty(dir: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  // Short first pauses: a stage's last exit is often still being accounted when its leader is reaped.
  for (let wait = 1; ; wait = Math.min(wait * 2, 20)) {
    if (!(await isPopulated(dir))) return true;
    if (Date.now() >= deadline) return false;
    await pause(wait);
  }
}

async function freezeAndKill(dir: string, freeze: boolean): Promise<void> {
  const freezeFile = join(dir, 'cgroup.freeze');
  if (freeze) {
    await writeFile(freezeFile, '1');
    // Frozen = nobody can fork any more. A task stuck in the kernel can delay that; kill anyway.
    const deadline = Date.now() + 500;
    while ((await events(dir).catch(() => new Map<string, string>())).get('frozen') !== '1' && Date.now() < deadline) await pause(5);
  }
  try {
    await signalProcs(dir, 'SIGKILL');
  } finally {
    if (freeze) await writeFile(freezeFile, '0').catch(() => undefined);
  }
}

/**
 * SIGKILLs everything in `dir` (a leaf cgroup) until it is empty or `ms` pass (a process in
 * uninterruptible sleep dies only when it wakes). True when empty.
 */
export async function killCgroup(dir: string, method: KillMethod, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (await isPopulated(dir)) {
    if (Date.now() >= deadline) return false;
    let done = false;
    if (method === 'cgroup.kill') done = await writeFile(join(dir, 'cgroup.kill'), '1').then(() => true, () => false);
    if (!done) await freezeAndKill(dir, method !== 'signal').catch(() => signalProcs(dir, 'SIGKILL'));
    await waitEmpty(dir, 200);
  }
  return true;
}

/** Removes an empty cgroup directory; true when it is gone (or never existed). */
export async function removeCgroup(dir: string, attempts = 20): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    try {
      await rmdir(dir);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return true;
      // EBUSY: a member's exit is still being accounted, or a child cgroup remains.
      if (code !== 'EBUSY' || attempt === attempts - 1) return false;
      await pause(25);
    }
  }
  return false;
}
