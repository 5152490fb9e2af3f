import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readDeliveryState, STATE_FILE, type JobTrace, type StartTraceOptions } from '../../src/trace/index.js';
import { runningJob, sampleOutput, waitFor, type RunningJob, startJobTrace } from './job.js';

let job: RunningJob | undefined;
afterEach(async () => {
  await job?.close();
  job = undefined;
});

function start(job: RunningJob, extra: Partial<StartTraceOptions> = {}): Promise<JobTrace> {
  return startJobTrace(job, { keepaliveIntervalMs: 1000, ...extra });
}

/** Writes `output` in uneven pieces, pausing now and then so several PATCHes go out. */
async function writeInPieces(trace: JobTrace, output: Buffer, pauseEvery = 200_000): Promise<void> {
  let offset = 0;
  let sinceSleep = 0;
  let size = 1;
  while (offset < output.length) {
    size = (size * 7 + 13) % 50_000 + 1;
    const piece = output.subarray(offset, offset + size);
    trace.write(piece);
    offset += piece.length;
    sinceSleep += piece.length;
    if (sinceSleep >= pauseEvery) {
      sinceSleep = 0;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  }
}

async function serverTrace(job: RunningJob): Promise<Buffer> {
  return job.ts.server.getTrace(job.build.id);
}

describe('trace delivery against the reference server', () => {
  it('delivers every byte exactly once, live and in the final update', async () => {
    job = await runningJob();
    const trace = await start(job, { outputLimitKiB: 64_000 });
    const output = sampleOutput(12_000_000); // several PATCHes of at most 8 MiB (v1)
    await writeInPieces(trace, output);
    const current = job;
    await waitFor('the live trace to reach the server', async () => (await serverTrace(current)).length === output.length);
    expect((await serverTrace(job)).equals(output)).toBe(true);

    // `running` went out once, before the first PATCH; parts were contiguous and at most 8 MiB.
    const kinds = job.client.calls.map((call) => call.kind);
    expect(kinds[0]).toBe('state');
    expect(job.client.calls.filter((call) => call.kind === 'state' && call.state === 'running')).toHaveLength(1);
    let expected = 0;
    for (const patch of job.client.patches()) {
      expect(patch.status).toBe(202);
      expect(patch.start).toBe(expected);
      expect(patch.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
      expected += patch.bytes ?? 0;
    }
    expect(expected).toBe(output.length);
    expect(job.client.patches().length).toBeGreaterThanOrEqual(2);

    const result = await trace.finish('success');
    await trace.settled();
    expect(result).toEqual({ delivered: true, status: 200 });
    expect((await serverTrace(job)).equals(output)).toBe(true);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('success');
    const record = await readDeliveryState(job.stateDir);
    expect(record).toMatchObject({ buildId: job.build.id, sentOffset: output.length, finalState: 'success', delivered: true });
    expect(JSON.parse(await readFile(join(job.stateDir, STATE_FILE), 'utf8'))).toEqual(record);
  });

  it('sends a burst in whole parts while the job still prints, without waiting for the update interval', async () => {
    // The server asks for updates every minute: only a whole part waiting can make one go sooner.
    job = await runningJob({ traceUpdateIntervalS: 60 });
    const trace = await start(job, { outputLimitKiB: 64_000, updateIntervalMs: 60_000, keepaliveIntervalMs: 60_000 });
    const part = 8 * 1024 * 1024; // v1's
    const output = sampleOutput(2 * part + 300_000, 4);
    // The first write ends a line: one ending in what may begin a token prefix (`g` of `glpat-`) is held back.
    output[99] = 0x0a;
    const current = job;
    trace.write(output.subarray(0, 100));
    await waitFor('the first output on the server', async () => (await serverTrace(current)).length === 100);
    trace.write(output.subarray(100));
    await waitFor('two whole parts on the server', async () => (await serverTrace(current)).length >= 100 + 2 * part);
    // Whole parts only: the rest waits for the interval, or for the end of the job.
    const live = job.client.patches();
    expect(live.map((patch) => patch.bytes)).toEqual([100, part, part]);
    expect((await serverTrace(job)).length).toBe(100 + 2 * part);

    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    expect((await serverTrace(job)).equals(output)).toBe(true);
  });

  it("re-sends from the server's offset after a 416 caused by lost acks", async () => {
    job = await runningJob();
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'apply_then_error', status: 500, count: 3 });
    const trace = await start(job);
    const output = sampleOutput(600_000, 2);
    await writeInPieces(trace, output, 50_000);
    const current = job;
    await waitFor('the live trace to reach the server', async () => (await serverTrace(current)).length === output.length);
    expect((await serverTrace(job)).equals(output)).toBe(true);

    const patches = job.client.patches();
    expect(patches.filter((patch) => patch.status === 500)).toHaveLength(3);
    const mismatch = patches.find((patch) => patch.status === 416);
    expect(mismatch?.serverLength).toBeGreaterThan(0);
    // After the 416 the next part starts exactly where the server said it was.
    const next = patches[patches.indexOf(mismatch!) + 1];
    expect(next?.start).toBe(mismatch?.serverLength);

    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    expect((await serverTrace(job)).equals(output)).toBe(true);
  });

  it('delivers the exact trace while 30% of PATCHes and PUTs fail with 5xx (and some acks are lost)', async () => {
    job = await runningJob({ faultSeed: 42 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 503, percent: 30 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'apply_then_error', status: 502, percent: 5 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'close', percent: 5 });
    job.ts.server.faults.add({ endpoint: 'update_build', action: 'error', status: 500, percent: 30 });
    const trace = await start(job, { outputLimitKiB: 16 * 1024 });
    // Keep printing until plenty of PATCHes went out, so the seeded faults fire many times.
    const source = sampleOutput(4_000_000, 3);
    let written = 0;
    while (job.client.patches().length < 25 && written + 20_000 <= source.length) {
      trace.write(source.subarray(written, written + 20_000));
      written += 20_000;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    const output = source.subarray(0, written);
    const current = job;
    await waitFor('the live trace to reach the server', async () => (await serverTrace(current)).length === output.length, 60_000);
    expect((await serverTrace(job)).equals(output)).toBe(true);
    const statuses = job.client.patches().map((patch) => patch.status);
    expect(statuses.filter((status) => status >= 500).length, statuses.join(' ')).toBeGreaterThan(2);

    expect(await trace.finish('failed')).toEqual({ delivered: true, status: 200 });
    expect((await serverTrace(job)).equals(output)).toBe(true);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('failed');
  }, 120_000);

  it('switches to full-trace PUTs after a PATCH 404 and keeps delivering', async () => {
    job = await runningJob();
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 404 });
    const trace = await start(job);
    trace.write('first line\n');
    const current = job;
    await waitFor('the first full PUT', async () => (await serverTrace(current)).toString() === 'first line\n');
    trace.write('second line\n');
    await waitFor('the second full PUT', async () => (await serverTrace(current)).toString() === 'first line\nsecond line\n');
    // Only one PATCH was tried; the rest went as PUTs with the whole trace.
    expect(job.client.patches()).toHaveLength(1);
    expect(job.client.calls.filter((call) => call.kind === 'full' && call.state === 'running').length).toBeGreaterThanOrEqual(2);

    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    expect((await serverTrace(job)).toString()).toBe('first line\nsecond line\n');
  });

  it('replaces the server copy with a full PUT when the server holds more than the runner has (416 beyond our length)', async () => {
    job = await runningJob();
    // Someone else's bytes are already on the server (e.g. a re-used build id).
    const stale = Buffer.from('stale bytes from an earlier attempt\n');
    const seeded = await job.client.patchTrace(job.build.id, job.build.token, 0, stale);
    expect(seeded.status).toBe(202);
    const trace = await start(job);
    trace.write('fresh\n');
    const current = job;
    await waitFor('the full PUT to replace the stale trace', async () => (await serverTrace(current)).toString() === 'fresh\n');
    const mismatch = job.client.patches().find((patch) => patch.status === 416);
    expect(mismatch?.serverLength).toBe(stale.length);
    expect(job.client.calls.some((call) => call.kind === 'full' && call.state === 'running' && call.status === 200)).toBe(true);
    // Back to incremental PATCHes from the new common length.
    trace.write('more\n');
    await waitFor('the next PATCH', async () => (await serverTrace(current)).toString() === 'fresh\nmore\n');
    expect(job.client.patches().at(-1)).toMatchObject({ status: 202, start: 6 });
    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
  });
});
