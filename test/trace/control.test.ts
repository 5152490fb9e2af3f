import { stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { JobAbortedError, type JobTrace, type StartTraceOptions } from '../../src/trace/index.js';
import { runningJob, sampleOutput, waitFor, type RunningJob, startJobTrace } from './job.js';

let job: RunningJob | undefined;
afterEach(async () => {
  await job?.close();
  job = undefined;
});

/** Starts the trace with a short keep-alive interval, so cancel probes come quickly. */
function start(job: RunningJob, extra: Partial<StartTraceOptions> = {}): Promise<JobTrace> {
  return startJobTrace(job, { keepaliveIntervalMs: 300, ...extra });
}

function abortCode(signal: AbortSignal): string | undefined {
  return signal.reason instanceof JobAbortedError ? signal.reason.code : undefined;
}

describe('cancellation and keep-alive', () => {
  it('aborts cancelSignal when a silent job is canceled on the server (Build-Status: canceled)', async () => {
    job = await runningJob();
    const trace = await start(job);
    trace.write('working...\n');
    const current = job;
    await waitFor('the first line on the server', async () => (await current.ts.server.getTrace(current.build.id)).length > 0);
    expect(trace.cancelSignal.aborted).toBe(false);

    job.ts.server.cancelJob(job.build.id);
    await waitFor('the cancel to be noticed', () => trace.cancelSignal.aborted);
    expect(abortCode(trace.cancelSignal)).toBe('JOB_CANCELED');
    expect(job.client.patches().some((patch) => patch.buildStatus === 'canceled')).toBe(true);

    // The runner's last words still reach the server; the final PUT is refused with 404 (§6.3).
    trace.write('ERROR: Job failed: canceled\n');
    const result = await trace.finish('failed');
    expect(result).toEqual({ delivered: false, status: 404, refused: true });
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('canceled');
  });

  it('aborts cancelSignal when the server answers a PATCH with 403', async () => {
    job = await runningJob();
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 403 });
    const trace = await start(job);
    trace.write('hello\n');
    await waitFor('the 403 to be noticed', () => trace.cancelSignal.aborted);
    expect(abortCode(trace.cancelSignal)).toBe('JOB_FORBIDDEN');
    // No more PATCHes once refused.
    const patches = job.client.patches().length;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(job.client.patches().length).toBe(patches);
    job.ts.server.faults.clear();
    expect(await trace.finish('failed')).toEqual({ delivered: true, status: 200 });
  });

  it('sends an empty PATCH as the keep-alive while the job is silent, at the pace the server asks for', async () => {
    job = await runningJob();
    // The reference server answers X-GitLab-Trace-Update-Interval: 1, which replaces the 30 s asked here.
    const trace = await start(job, { keepaliveIntervalMs: 30_000, updateIntervalMs: 50 });
    trace.write('one line\n');
    const current = job;
    await waitFor('the line on the server', async () => (await current.ts.server.getTrace(current.build.id)).length === 9);
    const before = job.client.patches().length;
    await waitFor('three keep-alive PATCHes', () => current.client.patches().length >= before + 3);
    const silent = job.client.patches().slice(before, before + 3);
    for (const patch of silent) {
      expect(patch).toMatchObject({ status: 202, start: 9, bytes: 0 });
    }
    // Spaced by the keep-alive interval (a busy machine only spaces them further), not sent in a loop.
    const starts = silent.map((patch) => (patch.at ?? 0) - (patch.ms ?? 0));
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(100);
    await trace.finish('success');
  });

  it('keeps taking output while the server hangs, and delivers it once the server answers again', async () => {
    job = await runningJob();
    const hang = job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'hang' });
    const trace = await start(job, { requestTimeoutMs: 1000, outputLimitKiB: 8192 });
    trace.write('first\n');
    const current = job;
    await waitFor('a PATCH to time out', () => current.client.patches().some((patch) => patch.aborted === true));
    const output = sampleOutput(5_000_000, 11);
    for (let offset = 0; offset < output.length; offset += 65_536) trace.write(output.subarray(offset, offset + 65_536));
    // Every byte is in the spool as soon as write() returns, whatever the network does.
    expect((await stat(trace.logPath)).size).toBe(6 + output.length);
    job.ts.server.faults.remove(hang);
    await waitFor('the live trace to catch up', async () => (await current.ts.server.getTrace(current.build.id)).length === 6 + output.length);
    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    expect((await job.ts.server.getTrace(job.build.id)).equals(Buffer.concat([Buffer.from('first\n'), output]))).toBe(true);
  });

  it('stops live sending when the daemon shuts down, and still makes one final attempt', async () => {
    job = await runningJob();
    const shutdown = new AbortController();
    const trace = await start(job, { signal: shutdown.signal });
    trace.write('before shutdown\n');
    const current = job;
    await waitFor('the line on the server', async () => (await current.ts.server.getTrace(current.build.id)).length > 0);
    shutdown.abort();
    const patches = job.client.patches().length;
    trace.write('after shutdown\n');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(job.client.patches().length).toBe(patches);
    expect(await trace.finish('failed')).toEqual({ delivered: true, status: 200 });
    expect((await job.ts.server.getTrace(job.build.id)).toString()).toBe('before shutdown\nafter shutdown\n');
  });
});
