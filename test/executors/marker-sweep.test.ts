import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MarkerSweeper } from '../../src/executors/shell/marker-sweeper.js';
import { findMarked, JOB_MARKER_VARIABLE, processAlive, sweepMarked, sweepMarkedAmong } from '../../src/executors/shell/process-group.js';

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

describe('sweeping several jobs at once', () => {
  it('kills the processes of each marker in one pass and counts them per marker', async () => {
    const [a, b, none] = ['a', 'b', 'n'].map((prefix) => `${prefix}${process.pid}-${Date.now()}`) as [string, string, string];
    const ofA = await Promise.all([sleeper(10, a), sleeper(40_000, a)]);
    const ofB = await sleeper(10, b);
    const other = await sleeper(10, `${a}x`);
    expect(await sweepMarkedAmong([a, b, none])).toEqual(new Map([[a, 2], [b, 1]]));
    for (const pid of [...ofA, ofB]) expect(await processAlive(pid)).toBe(false);
    expect(await processAlive(other)).toBe(true);
  });

  it('the daemon\'s sweeper kills what each job asked for, real processes, passes shared', async () => {
    const [a, b] = ['a', 'b'].map((prefix) => `${prefix}${process.pid}-${Date.now()}`) as [string, string];
    const passes: string[][] = [];
    const sweeper = new MarkerSweeper({ paceMs: 50, sweep: (markers) => (passes.push([...markers]), sweepMarkedAmong(markers)) });
    const ofA = await sleeper(10, a);
    const ofB = await Promise.all([sleeper(10, b), sleeper(10, b)]);
    const other = await sleeper(10, undefined);
    expect(await Promise.all([sweeper.sweep(a), sweeper.sweep(b)])).toEqual([1, 2]);
    expect(passes).toEqual([[a, b]]);
    for (const pid of [ofA, ...ofB]) expect(await processAlive(pid)).toBe(false);
    expect(await processAlive(other)).toBe(true);
  });
});

describe('the paced sweeper', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A sweeper whose passes are recorded and answered by `answer` (none killed by default). */
  function recorded(answer: (markers: readonly string[]) => Promise<Map<string, number>> = async () => new Map()) {
    const passes: { markers: string[]; at: number }[] = [];
    const sweeper = new MarkerSweeper({
      paceMs: 500,
      sweep: (markers) => {
        passes.push({ markers: [...markers], at: performance.now() });
        return answer(markers);
      },
    });
    return { sweeper, passes };
  }

  it('sweeps at once when idle; what is asked for within the pace waits for one pass at its end', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { sweeper, passes } = recorded(async (markers) => new Map(markers.map((marker) => [marker, marker.length])));
    const first = sweeper.sweep('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(passes.map((p) => p.markers)).toEqual([['a']]);
    expect(await first).toBe(1);

    await vi.advanceTimersByTimeAsync(100);
    const later = [sweeper.sweep('bb'), sweeper.sweep('ccc'), sweeper.sweep('bb')];
    await vi.advanceTimersByTimeAsync(399);
    expect(passes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes.map((p) => p.markers)).toEqual([['a'], ['bb', 'ccc']]);
    expect(passes[1]!.at - passes[0]!.at).toBe(500);
    expect(await Promise.all(later)).toEqual([2, 3, 2]);

    // Idle again for longer than the pace: at once.
    await vi.advanceTimersByTimeAsync(2000);
    const idle = sweeper.sweep('d');
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toHaveLength(3);
    expect(await idle).toBe(1);
  });

  it('asks made while a pass runs go in the next one; a failed pass fails its askers only', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let finish: ((killed: Map<string, number>) => void) | undefined;
    let fail = true;
    const { sweeper, passes } = recorded(
      (markers) =>
        new Promise((resolve, reject) => {
          if (fail) {
            fail = false;
            finish = () => reject(new Error('no /proc today'));
          } else resolve(new Map(markers.map((marker) => [marker, 1])));
        }),
    );
    const failing = sweeper.sweep('a');
    const failed = expect(failing).rejects.toThrow('no /proc today');
    await vi.advanceTimersByTimeAsync(0);
    const during = sweeper.sweep('b');
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes.map((p) => p.markers)).toEqual([['a']]);
    finish!(new Map());
    await failed;
    await vi.advanceTimersByTimeAsync(0);
    expect(passes.map((p) => p.markers)).toEqual([['a'], ['b']]);
    expect(await during).toBe(1);
  });

  it('once hurried (the daemon stops), a waiting sweep passes at once and later ones wait for no pace', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { sweeper, passes } = recorded(async (markers) => new Map(markers.map((marker) => [marker, 1])));
    const first = sweeper.sweep('a');
    await vi.advanceTimersByTimeAsync(10);
    expect(await first).toBe(1);
    const waiting = sweeper.sweep('b');
    await vi.advanceTimersByTimeAsync(10);
    expect(passes).toHaveLength(1);
    sweeper.hurry();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes.map((p) => p.markers)).toEqual([['a'], ['b']]);
    expect(await waiting).toBe(1);
    const next = sweeper.sweep('c');
    await vi.advanceTimersByTimeAsync(0);
    expect(passes.map((p) => p.markers)).toEqual([['a'], ['b'], ['c']]);
    expect(passes[2]!.at - passes[0]!.at).toBeLessThan(500);
    expect(await next).toBe(1);
  });
});
