/** Small helpers for end-to-end tests of the agent commands. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { processAlive } from '../../src/executors/shell/process-group.js';

/** A fresh temp dir with `builds` and `cache` paths under it. */
export async function workDirs(): Promise<{ root: string; builds: string; cache: string }> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-agent-'));
  return { root, builds: join(root, 'builds'), cache: join(root, 'cache') };
}

/** Waits until `predicate` holds, checking every 50 ms, failing after `ms`. */
export async function waitUntil(predicate: () => boolean | Promise<boolean>, ms = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Pids listed one per line in `file` (empty when missing). */
export async function pidsIn(file: string): Promise<number[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => /^\d+$/.test(l.trim())).map(Number);
}

/** True when none of `pids` is a live process. */
export async function allGone(pids: number[]): Promise<boolean> {
  return (await Promise.all(pids.map(processAlive))).every((alive) => !alive);
}
