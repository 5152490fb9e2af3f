import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log/index.js';
import { TraceCapture } from '../../src/trace/capture.js';
import { limitNotice } from '../../src/trace/limit.js';
import { SpoolReader, SpoolWriter } from '../../src/trace/spool.js';
import { SentTrace } from '../../src/trace/view.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trace-capture-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup(limitBytes: number, secrets: string[] = []) {
  const path = join(dir, 'trace.log');
  const spool = SpoolWriter.create(path);
  const { reader } = await SpoolReader.open(path);
  const trace = new SentTrace(spool, reader);
  const cuts: number[] = [];
  const capture = new TraceCapture({
    secrets,
    limitBytes,
    spool,
    logger: silentLogger(),
    onCut: (cut) => {
      cuts.push(cut);
      trace.setCut(cut, limitNotice(limitBytes, path));
    },
    onData: () => undefined,
  });
  const close = async () => {
    spool.close();
    await reader.close();
  };
  return { path, spool, trace, capture, cuts, close };
}

describe('capture into the spool', () => {
  it('appends sanitised, masked output to the spool file in order', async () => {
    const { path, capture, close } = await setup(1 << 20, ['topsecret']);
    const out = capture.openStream();
    out.write('line 1 top');
    out.write(Buffer.from('secret\n'));
    out.write(Uint8Array.from([0x6f, 0x6b, 0xff, 0x0a]));
    capture.end();
    await close();
    expect(await readFile(path, 'utf8')).toBe('line 1 [MASKED]\nok\ufffd\n');
  });

  it('holds nothing of a runner line back for the next one, so a stream writing meanwhile cannot get ahead of it', async () => {
    const { path, capture, close } = await setup(1 << 20, ['topsecret']);
    const out = capture.openStream();
    capture.write('runner says top');
    out.write('job output\n');
    capture.write(' and topsecret\n');
    capture.end();
    await close();
    expect(await readFile(path, 'utf8')).toBe('runner says topjob output\n and [MASKED]\n');
  });

  it('keeps stdout and stderr characters intact when their chunks interleave', async () => {
    const { path, capture, close } = await setup(1 << 20);
    const out = capture.stream();
    const err = capture.stream();
    const euro = Buffer.from('€');
    out.write(euro.subarray(0, 1));
    err.write(Buffer.from('E\n'));
    out.write(euro.subarray(1));
    out.end();
    await new Promise((resolve) => out.once('finish', resolve));
    err.write('still open\n');
    capture.end();
    await close();
    expect(await readFile(path, 'utf8')).toBe('E\n€still open\n');
  });

  it('ends the sent trace at the limit with one notice and keeps the full log on disk', async () => {
    const { path, trace, capture, cuts, close } = await setup(100);
    const line = 'x'.repeat(29) + '\n'; // 30 bytes
    for (let i = 0; i < 10; i++) capture.write(line);
    capture.end();
    const notice = limitNotice(100, path);
    expect(cuts).toEqual([100]);
    expect(trace.length).toBe(100 + Buffer.byteLength(notice));
    const sent = await trace.read(0, trace.length);
    expect(sent.toString()).toBe(line.repeat(10).slice(0, 100) + notice);
    expect(sent.toString().split("exceeded limit").length).toBe(2);
    // Reads that straddle the cut compose spool bytes and the notice.
    expect((await trace.read(95, 110)).toString()).toBe(line.repeat(10).slice(95, 100) + notice.slice(0, 10));
    await close();
    expect(await readFile(path, 'utf8')).toBe(line.repeat(10));
  });

  it('streams the sent trace as text pieces that join to the whole', async () => {
    const { trace, capture, close } = await setup(10 << 20);
    const text = 'ünïcödé 😀 '.repeat(200_000); // > 1 MiB so pieces split characters
    capture.write(text);
    capture.end();
    let joined = '';
    for await (const piece of trace.text(trace.length)) joined += piece;
    expect(joined).toBe(text);
    await close();
  });
});
