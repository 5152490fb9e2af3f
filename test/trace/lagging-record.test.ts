/**
 * The delivery record notes how much of the trace the server acknowledged without a write per PATCH
 * (a burst's parts would each cost one): the note reaches the disk with the next update, or within
 * NOTE_WRITE_MS. A runner that dies in between leaves a record behind the server; resuming from it
 * must still deliver each byte once, the server telling where its trace ends.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { RunnerApiV4Client } from '../../src/client/v4/client.js';
import { readDeliveryState, resumeDelivery, startTrace, STATE_FILE } from '../../src/trace/index.js';
import { DeliveryStateStore, NOTE_WRITE_MS } from '../../src/trace/state.js';
import { startTestServer } from '../helpers/server.js';
import { sampleOutput, waitFor } from './job.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.useRealTimers();
});

async function stateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lagging-record-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const recorded = async (dir: string): Promise<number | undefined> => (await readDeliveryState(dir))?.sentOffset;

describe('the delivery record', () => {
  it('writes a note with the next update, or on its own within NOTE_WRITE_MS', async () => {
    const dir = await stateDir();
    const store = new DeliveryStateStore(dir, { version: 1, buildId: 7, sentOffset: 0, delivered: false });
    await store.update({});
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    store.note({ sentOffset: 100 });
    expect(await recorded(dir)).toBe(0);
    await store.update({ finalState: 'success' });
    expect(await readDeliveryState(dir)).toMatchObject({ sentOffset: 100, finalState: 'success' });
    // The update wrote the note: no write of its own is left pending.
    expect(vi.getTimerCount()).toBe(0);

    store.note({ sentOffset: 200 });
    store.note({ sentOffset: 300 });
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(NOTE_WRITE_MS - 1);
    expect(await recorded(dir)).toBe(100);
    await vi.advanceTimersByTimeAsync(1);
    vi.useRealTimers();
    await waitFor('the note on disk', async () => (await recorded(dir)) === 300);
  });
});

describe('resuming from a record behind the server', () => {
  for (const api of ['v1', 'v4'] as const) {
    it(`${api}: delivers each byte once when the record says less was acknowledged than the server has`, async () => {
      const ts = await startTestServer();
      cleanups.push(() => ts.close());
      const client = api === 'v4' ? new RunnerApiV4Client({ url: ts.url, executor: 'shell' }) : new RunnerApiClient({ url: ts.url, executor: 'shell' });
      cleanups.push(() => client.close());
      const runner = await ts.registerRunner();
      await ts.pipeline('job:\n  script: [echo hi]\n');
      const answer = await client.requestBuild(runner.token, undefined);
      if (answer.kind !== 'build') throw new Error(`no build: ${answer.kind}`);
      const build = answer.build;
      const dir = await stateDir();
      const daemon = new AbortController();
      const trace = await startTrace({ build, client, runnerToken: runner.token, stateDir: dir, signal: daemon.signal, updateIntervalMs: 50 });
      const output = sampleOutput(3 * 1024 * 1024 + 123);
      trace.write(output);
      await waitFor('the server to have the output', async () => (await ts.server.getTrace(build.id)).length === output.length);
      daemon.abort(); // the runner dies (no final update) before it writes what the server acknowledged
      // However far the record got, put it back to the start: the most a restart can be behind.
      const path = join(dir, STATE_FILE);
      await writeFile(path, JSON.stringify({ ...JSON.parse(await readFile(path, 'utf8')), sentOffset: 0 }));

      const resumed = await resumeDelivery(dir, client, runner.token, AbortSignal.timeout(30_000), { unfinishedState: 'failed' });
      expect(resumed).toEqual({ delivered: true, status: 200 });
      const stored = await ts.server.getTrace(build.id);
      expect(stored.subarray(0, output.length).equals(output)).toBe(true);
      const explanation = stored.subarray(output.length).toString();
      expect(explanation).toMatch(/^\u001b\[0;33mWARNING: The runner stopped \(killed or crashed\)[^\n]*\n[^\n]*ERROR: Job failed \(system failure\)[^\n]*\n$/);
      expect(ts.server.getJob(build.id)?.status).toBe('failed');
    });
  }
});
