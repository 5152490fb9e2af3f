import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { runningJob, sampleOutput, startJobTrace, type RunningJob } from './job.js';

let job: RunningJob | undefined;
afterEach(async () => {
  await job?.close();
  job = undefined;
});

const MiB = 1024 * 1024;

describe('memory', () => {
  it('keeps memory flat while a job prints 200 MB', async () => {
    job = await runningJob();
    // The default update interval, as in production.
    const trace = await startJobTrace(job, { updateIntervalMs: 1000 });
    const chunk = sampleOutput(64 * 1024, 9);
    const total = 200 * MiB;
    async function* output(): AsyncGenerator<Buffer> {
      for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
    }
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    try {
      await pipeline(Readable.from(output()), trace.stream);
      peak = Math.max(peak, process.memoryUsage().rss);
      expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    } finally {
      clearInterval(sampler);
    }
    const growthMiB = (peak - baseline) / MiB;
    expect(growthMiB, `RSS grew by ${growthMiB.toFixed(1)} MiB`).toBeLessThan(100);
    expect((await stat(trace.logPath)).size).toBe(total);
    // The default 4 MiB limit bounds what went to the server.
    const stored = await job.ts.server.getTrace(job.build.id);
    expect(stored.subarray(0, 4 * MiB).equals(Buffer.concat(Array(64).fill(chunk)))).toBe(true);
    expect(stored.subarray(4 * MiB).toString()).toContain('exceeded limit');
  });
});
