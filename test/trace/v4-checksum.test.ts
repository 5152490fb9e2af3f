/**
 * v4's final update states the CRC-32 and size of the whole trace the runner sent. The live job sums
 * it as the output is written (no read-back at the end), up to the output limit's cut, after which
 * the limit notice ends the sent trace: the sum must come out as that of the trace the server holds,
 * however the output's pieces fall around the cut.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobRef, JobUpdate, JobUpdateResult } from '../../src/client/api.js';
import { RunnerApiV4Client } from '../../src/client/v4/client.js';
import { PrefixChecksum } from '../../src/trace/checksum.js';
import { startTrace } from '../../src/trace/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { sampleOutput } from './job.js';

/** The v4 client, keeping each job update it sent. */
class RecordingV4Client extends RunnerApiV4Client {
  readonly updates: JobUpdate[] = [];

  override async updateJob(job: JobRef, update: JobUpdate, signal?: AbortSignal): Promise<JobUpdateResult> {
    this.updates.push(update);
    return super.updateJob(job, update, signal);
  }
}

const checksumOf = (bytes: Uint8Array): string => `crc32:${crc32(bytes).toString(16).padStart(8, '0')}`;

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

/** Writes `output` as `pieces` through a live v4 job's trace with `limitKiB`; the final update and the server's trace. */
async function finalOf(output: Buffer, pieces: number[], limitKiB: number, extra: { timestamps?: boolean; secrets?: string[] } = {}) {
  const ts: TestServer = await startTestServer();
  const stateDir = await mkdtemp(join(tmpdir(), 'v4-checksum-'));
  const client = new RecordingV4Client({ url: ts.url, executor: 'shell' });
  cleanup = async () => {
    await client.close();
    await ts.close();
    await rm(stateDir, { recursive: true, force: true });
  };
  const runner = await ts.registerRunner();
  await ts.pipeline('job:\n  script: [echo hi]\n');
  const answer = await client.requestBuild(runner.token, undefined);
  if (answer.kind !== 'build') throw new Error(`no build: ${answer.kind}`);
  const trace = await startTrace({ build: answer.build, client, runnerToken: runner.token, stateDir, signal: new AbortController().signal, updateIntervalMs: 50, outputLimitKiB: limitKiB, ...extra });
  // As a stage's output: a stream of its own.
  const out = trace.openStream();
  let offset = 0;
  for (const size of pieces) {
    out.write(output.subarray(offset, offset + size));
    offset += size;
  }
  out.end();
  expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
  return { final: client.updates.at(-1), stored: await ts.server.getTrace(answer.build.id) };
}

describe('the checksum of a v4 final update', () => {
  it('is that of every byte written when nothing was cut', async () => {
    const output = sampleOutput(300_000);
    const { final, stored } = await finalOf(output, [100_000, 1, 99_999, 100_000], 4096);
    expect(stored.equals(output)).toBe(true);
    expect(final?.output).toEqual({ checksum: checksumOf(output), bytesize: output.length });
  });

  // The second piece crosses the 1 KiB limit: the spool ends past the cut but before the cut plus
  // the notice's length, and in the second case well past both.
  for (const pieces of [[1000, 100], [1000, 100, 5000]]) {
    it(`is that of the bytes up to the cut and the limit notice (pieces ${pieces.join(', ')})`, async () => {
      const output = sampleOutput(pieces.reduce((a, b) => a + b, 0));
      const { final, stored } = await finalOf(output, pieces, 1);
      expect(stored.subarray(0, 1024).equals(output.subarray(0, 1024))).toBe(true);
      expect(stored.subarray(1024).toString()).toContain('exceeded');
      expect(final?.output).toEqual({ checksum: checksumOf(stored), bytesize: stored.length });
    });
  }
});

describe('the checksum and size of a stamped v4 trace (FF_TIMESTAMPS)', () => {
  it('are those of the stamped trace the server holds, a secret split across writes masked before its line is stamped', async () => {
    const secret = 'correct-horse-battery-staple';
    const output = Buffer.from(`${sampleOutput(50_000).toString()}the secret is ${secret}, told in pieces\nlast line without a newline`);
    const at = output.indexOf(secret) + 5;
    const { final, stored } = await finalOf(output, [at, 3, 4, output.length - at - 7], 4096, { timestamps: true, secrets: [secret] });
    const lines = stored.toString().split('\n').filter((line) => line !== '');
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z 01O[ +]/);
    const shown = lines.map((line) => line.slice(32)).join('\n');
    expect(shown).toBe(`${output.toString().replace(secret, '[MASKED]').trimEnd()}`);
    expect(final?.output).toEqual({ checksum: checksumOf(stored), bytesize: stored.length });
  });

  it('cuts a stamped trace at the limit on a character boundary, the notice after it', async () => {
    const output = Buffer.from('é'.repeat(2000));
    const { final, stored } = await finalOf(output, [1001, 2999], 1, { timestamps: true });
    const cut = stored.indexOf('\n\u001b[31;1mJob\'s log exceeded limit');
    expect(cut).toBeLessThanOrEqual(1024);
    expect(stored.subarray(0, cut).toString()).not.toContain('\ufffd');
    expect(final?.output).toEqual({ checksum: checksumOf(stored), bytesize: stored.length });
  });
});

describe('PrefixChecksum fed as the trace is written', () => {
  const bytes = sampleOutput(10_000);
  const source = (reads: number[][]) => ({
    read: async (start: number, end: number) => {
      reads.push([start, end]);
      return bytes.subarray(start, end);
    },
  });

  it('reads nothing back for what it was fed, and only what it was not', async () => {
    const reads: number[][] = [];
    const sum = new PrefixChecksum(source(reads));
    sum.feed(bytes.subarray(0, 4000), 0);
    sum.feed(bytes.subarray(4000, 6000), 4000);
    expect(await sum.of(6000)).toEqual({ checksum: checksumOf(bytes.subarray(0, 6000)), bytesize: 6000 });
    expect(reads).toEqual([]);
    expect(await sum.of(10_000)).toEqual({ checksum: checksumOf(bytes), bytesize: 10_000 });
    expect(reads).toEqual([[6000, 10_000]]);
  });

  it('ignores bytes that do not continue what it covers, and starts over when told the bytes past an offset changed', async () => {
    const reads: number[][] = [];
    const sum = new PrefixChecksum(source(reads));
    sum.feed(bytes.subarray(0, 4000), 0);
    sum.feed(bytes.subarray(5000, 6000), 5000);
    sum.forget(4000);
    expect(await sum.of(5000)).toEqual({ checksum: checksumOf(bytes.subarray(0, 5000)), bytesize: 5000 });
    expect(reads).toEqual([[4000, 5000]]);
    sum.forget(3000);
    expect(await sum.of(5000)).toEqual({ checksum: checksumOf(bytes.subarray(0, 5000)), bytesize: 5000 });
    expect(reads).toEqual([[4000, 5000], [0, 5000]]);
  });
});
