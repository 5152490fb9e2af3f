import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { findMarked, JOB_MARKER_VARIABLE, sweepMarked } from '../../src/executors/shell/process-group.js';

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

/** A sleeping process whose environment is `PAD=<padding>` first, then the marker (insertion order). */
async function sleeper(padding: number, marker: string | undefined): Promise<number> {
  const env: Record<string, string> = { PAD: 'x'.repeat(padding), PATH: process.env.PATH ?? '/usr/bin:/bin' };
  if (marker !== undefined) env[JOB_MARKER_VARIABLE] = marker;
  const child = spawn('sleep', ['300'], { env, stdio: 'ignore' });
  started.push(child);
  await once(child, 'spawn');
  return child.pid as number;
}

describe('the marker sweep', () => {
  // Environments past a page and past 64 KiB, the marker first, last, and around 32 KiB.
  it('finds the marked processes wherever the marker sits in a large environment, and only them', async () => {
    const marker = `m${process.pid}-${Date.now()}`;
    const seam = 32 * 1024 - 'PAD='.length - 1; // the marker variable starts at byte 32768
    const marked = await Promise.all([0, seam - 10, seam - 3, seam, 100_000].map((padding) => sleeper(padding, marker)));
    const others = await Promise.all([sleeper(10, undefined), sleeper(seam - 3, `${marker}x`), sleeper(70_000, undefined)]);
    const found = await findMarked(marker);
    expect(found.sort((a, b) => a - b)).toEqual([...marked].sort((a, b) => a - b));
    expect(found).not.toContain(others[0]);
    expect(await sweepMarked(marker)).toBe(marked.length);
    expect(await findMarked(marker)).toEqual([]);
  });
});
