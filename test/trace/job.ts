/**
 * Shared set-up for the trace tests: a real reference server, a registered runner and one running
 * build; a client that records what the trace streamer sent and what the server answered.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerApiClient, type ApiResult, type PatchTraceResult } from '../../src/client/runner-api.js';
import type { BuildPayload, RunnerBuildState } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { ReferenceServerOptions } from '../../src/server/index.js';
import { startTrace, type JobTrace, type StartTraceOptions } from '../../src/trace/index.js';

export interface Call {
  kind: 'patch' | 'state' | 'full';
  status: number;
  start?: number;
  bytes?: number;
  state?: RunnerBuildState;
  buildStatus?: string;
  serverLength?: number;
  /** The caller's signal aborted the call (e.g. the per-request deadline). */
  aborted?: boolean;
  /** When the answer arrived, and how long the call took (ms). */
  at?: number;
  ms?: number;
}

/** The real client, recording each trace-related call and its answer. */
export class RecordingClient extends RunnerApiClient {
  readonly calls: Call[] = [];

  override async patchTrace(id: number, token: string, start: number, bytes: Uint8Array, signal?: AbortSignal): Promise<PatchTraceResult> {
    const started = Date.now();
    let result: PatchTraceResult;
    try {
      result = await super.patchTrace(id, token, start, bytes, signal);
    } catch (error) {
      this.calls.push({ kind: 'patch', status: -1, aborted: true, start, bytes: bytes.byteLength, at: Date.now(), ms: Date.now() - started });
      throw error;
    }
    this.calls.push({
      kind: 'patch', status: result.status, start, bytes: bytes.byteLength, at: Date.now(), ms: Date.now() - started,
      ...(result.buildStatus !== undefined ? { buildStatus: result.buildStatus } : {}),
      ...(result.serverLength !== undefined ? { serverLength: result.serverLength } : {}),
    });
    return result;
  }

  override async updateBuild(id: number, token: string, update: { state?: RunnerBuildState; trace?: string }, signal?: AbortSignal): Promise<ApiResult> {
    const result = await super.updateBuild(id, token, update, signal);
    this.calls.push({ kind: update.trace === undefined ? 'state' : 'full', status: result.status, ...(update.state ? { state: update.state } : {}) });
    return result;
  }

  override async updateBuildWithTrace(id: number, token: string, state: RunnerBuildState, trace: AsyncIterable<string>, signal?: AbortSignal): Promise<ApiResult> {
    const result = await super.updateBuildWithTrace(id, token, state, trace, signal);
    this.calls.push({ kind: 'full', status: result.status, state });
    return result;
  }

  patches(): Call[] {
    return this.calls.filter((call) => call.kind === 'patch');
  }
}

export interface RunningJob {
  ts: TestServer;
  client: RecordingClient;
  build: BuildPayload;
  runnerToken: string;
  stateDir: string;
  close(): Promise<void>;
}

/** Starts a server, registers a runner and takes one build from it. */
export async function runningJob(options: Partial<ReferenceServerOptions> = {}, variables?: Record<string, string>): Promise<RunningJob> {
  const ts = await startTestServer(options);
  const runner = await ts.registerRunner();
  await ts.pipeline('job:\n  script: [echo hi]\n', variables);
  const client = new RecordingClient({ url: ts.url, executor: 'shell' });
  const answer = await client.requestBuild(runner.token, undefined);
  if (answer.kind !== 'build') throw new Error(`expected a build, got ${answer.kind} (${answer.status})`);
  const stateDir = await mkdtemp(join(tmpdir(), 'trace-job-'));
  return {
    ts, client, build: answer.build, runnerToken: runner.token, stateDir,
    async close() {
      await client.close();
      await ts.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns true, or throws after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Deterministic printable output of `size` bytes (lines of varying length), ending in a newline. The
 * masker holds back a tail that could still become a secret until more output or the end; the tokens
 * are random per run, so output ending in arbitrary characters would now and then keep its last bytes
 * off the live trace until `finish()`. No secret contains a newline, so nothing is held back here.
 */
export function sampleOutput(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(size);
  let state = seed;
  for (let i = 0; i < size; i++) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    out[i] = state % 61 === 0 ? 0x0a : 0x20 + (state % 95);
  }
  if (size > 0) out[size - 1] = 0x0a;
  return out;
}

/** Starts the trace of `job` with a fast update interval; `extra` overrides any option. */
export function startJobTrace(job: RunningJob, extra: Partial<StartTraceOptions> = {}): Promise<JobTrace> {
  return startTrace({
    build: job.build,
    client: job.client,
    runnerToken: job.runnerToken,
    stateDir: job.stateDir,
    signal: new AbortController().signal,
    updateIntervalMs: 100,
    ...extra,
  });
}
