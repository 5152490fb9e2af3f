/**
 * Trace streamer throughput and latency against the reference server (in this process, on
 * 127.0.0.1). Phase 0: the capture pipeline alone (sanitise, mask, limit, spool; no network).
 * Phase 1: a job prints 100 MB as fast as it can — capture MB/s while the sender streams to the
 * server (same event loop), end-to-end MB/s (until the server holds every byte) and peak RSS. Phase 2: a job prints a
 * timestamped line every 10 ms — print-to-server latency p50/p95 with the default 1 s batching.
 * Figures are printed, never asserted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { RunnerApiClient } from '../src/client/runner-api.js';
import { silentLogger } from '../src/log/index.js';
import { TraceCapture } from '../src/trace/capture.js';
import { withSecretLines } from '../src/trace/secrets.js';
import { SpoolWriter } from '../src/trace/spool.js';
import type { BuildPayload } from '../src/protocol/types.js';
import { startTrace, type JobTrace } from '../src/trace/index.js';
import { startTestServer, type TestServer } from '../test/helpers/server.js';

const MiB = 1024 * 1024;

interface Job {
  build: BuildPayload;
  trace: JobTrace;
  stateDir: string;
}

async function startJob(ts: TestServer, client: RunnerApiClient, runnerToken: string, outputLimitKiB: number): Promise<Job> {
  await ts.pipeline('job:\n  script: [echo hi]\n');
  const answer = await client.requestBuild(runnerToken, undefined);
  if (answer.kind !== 'build') throw new Error(`no build (${answer.kind}, status ${answer.status})`);
  const stateDir = await mkdtemp(join(tmpdir(), 'bench-trace-'));
  const trace = await startTrace({
    build: answer.build,
    client,
    runnerToken,
    stateDir,
    outputLimitKiB,
    signal: new AbortController().signal,
  });
  return { build: answer.build, trace, stateDir };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

function outputChunk(): Buffer {
  const line = Buffer.from(`${'build output '.repeat(6)}\n`);
  return Buffer.concat(Array(Math.ceil((64 * 1024) / line.length)).fill(line)).subarray(0, 64 * 1024);
}

/** A PEM-shaped private key (random base64 in 64-character lines), like a deploy key in a secret variable. */
function pemKey(): string {
  let seed = 42;
  const bytes = Buffer.from(
    Uint8Array.from({ length: 2400 }, () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed >>> 24;
    }),
  );
  const body = bytes.toString('base64').match(/.{1,64}/g) ?? [];
  return ['-----BEGIN RSA PRIVATE KEY-----', ...body, '-----END RSA PRIVATE KEY-----'].join('\n');
}

async function captureOnly(label: string, secrets: string[], timestamps = false): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-capture-'));
  const chunk = outputChunk();
  const pass = async (total: number): Promise<number> => {
    const spool = SpoolWriter.create(join(dir, 'trace.log'));
    const capture = new TraceCapture({ secrets, limitBytes: 200 * MiB, spool, logger: silentLogger(), onCut: () => undefined, onData: () => undefined, timestamps });
    async function* output(): AsyncGenerator<Buffer> {
      for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
    }
    const started = performance.now();
    await pipeline(Readable.from(output()), capture.stream());
    capture.end();
    const seconds = (performance.now() - started) / 1000;
    spool.close();
    return total / 1e6 / seconds;
  };
  await pass(20 * MiB); // warm-up
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const rate = await pass(100 * MiB);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  process.stdout.write(
    `capture pipeline alone, 100 MiB of 79-byte lines (sanitise, mask ${label}, ${timestamps ? 'stamp each line, ' : ''}limit, spool): ${rate.toFixed(0)} MB/s, ` +
      `RSS +${((peak - baseline) / MiB).toFixed(0)} MiB (peak ${(peak / MiB).toFixed(0)} MiB)\n`,
  );
  await rm(dir, { recursive: true, force: true });
}

async function throughput(ts: TestServer, client: RunnerApiClient, runnerToken: string): Promise<void> {
  const total = 100 * MiB;
  const job = await startJob(ts, client, runnerToken, 200 * 1024);
  const chunk = outputChunk();
  async function* output(): AsyncGenerator<Buffer> {
    for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
  }
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const started = performance.now();
  await pipeline(Readable.from(output()), job.trace.stream);
  const captured = performance.now();
  await waitUntil(() => (ts.server.getJob(job.build.id)?.trace_size ?? 0) >= total);
  const onServer = performance.now();
  const result = await job.trace.finish('success');
  const finished = performance.now();
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const mb = total / 1e6;
  process.stdout.write(
    `100 MiB printed through the trace (output limit raised to 200 MiB so all of it is sent)\n` +
      `  capture while streaming: ${(mb / ((captured - started) / 1000)).toFixed(0)} MB/s (${((captured - started) / 1000).toFixed(2)} s)\n` +
      `  to the server:           ${(mb / ((onServer - started) / 1000)).toFixed(0)} MB/s (${((onServer - started) / 1000).toFixed(2)} s, live PATCHes)\n` +
      `  final update:            ${((finished - onServer) / 1000).toFixed(2)} s, delivered=${result.delivered} status=${result.status}\n` +
      `  RSS:                     baseline ${(baseline / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB ` +
      `(+${((peak - baseline) / MiB).toFixed(0)} MiB; the reference server runs in this process)\n`,
  );
  await rm(job.stateDir, { recursive: true, force: true });
}

async function latency(ts: TestServer, client: RunnerApiClient, runnerToken: string): Promise<void> {
  const job = await startJob(ts, client, runnerToken, 4096);
  const lines = 500;
  const printed: Array<{ end: number; at: number }> = [];
  const arrived: number[] = [];
  let offset = 0;
  let next = 0;
  const poller = setInterval(() => {
    const size = ts.server.getJob(job.build.id)?.trace_size ?? 0;
    const now = performance.now();
    while (next < printed.length && (printed[next]?.end ?? Infinity) <= size) {
      arrived.push(now - (printed[next]?.at ?? now));
      next++;
    }
  }, 2);
  for (let i = 0; i < lines; i++) {
    const text = `${new Date().toISOString()} line ${i}\n`;
    job.trace.write(text);
    offset += Buffer.byteLength(text);
    printed.push({ end: offset, at: performance.now() });
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await waitUntil(() => next >= printed.length);
  clearInterval(poller);
  await job.trace.finish('success');
  const sorted = [...arrived].sort((a, b) => a - b);
  process.stdout.write(
    `print-to-server latency, ${lines} lines at ~100 lines/s, update interval 1 s\n` +
      `  p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms\n`,
  );
  await rm(job.stateDir, { recursive: true, force: true });
}

/** Runs both phases against a fresh reference server. */
export async function run(): Promise<void> {
  const ts = await startTestServer();
  const client = new RunnerApiClient({ url: ts.url, executor: 'shell' });
  try {
    const runner = await ts.registerRunner();
    // Three secrets of token length, like a build token, a runner token and one secret variable…
    const tokens = ['q9YtR2vL7mK4xN8bW1cZ', 'a3f09c6e1b2d4f5a6c7e8d9b0a1f2e3d', 'hunter2-but-longer'];
    await captureOnly('3 secrets', tokens);
    // …and the same with a multi-line secret (each of its lines is masked too).
    await captureOnly('3 secrets + a 52-line PEM key', [...withSecretLines([...tokens, pemKey()])]);
    // …and with GitLab Runner 19's line stamps (FF_TIMESTAMPS, on by default over API v4): 32 bytes a line more.
    await captureOnly('3 secrets', tokens, true);
    await captureOnly('3 secrets', tokens);
    await throughput(ts, client, runner.token);
    await latency(ts, client, runner.token);
  } finally {
    await client.close();
    await ts.close();
  }
}
