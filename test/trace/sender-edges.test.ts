/**
 * The live trace sender against a coordinator made of undici's MockAgent, for what the reference
 * server does not do on its own: an answer lost after the server stored the bytes (a proxy's 502),
 * and a cancel that arrives only in the Build-Status header of an accepted PATCH.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseBuildPayload } from '../../src/protocol/build-payload.js';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTrace, type JobTrace } from '../../src/trace/index.js';
import { API, mockCoordinator, type MockCoordinator } from '../helpers/mock-coordinator.js';
import { waitFor } from './job.js';

let mock: MockCoordinator;
let stateDir: string;
let trace: JobTrace | undefined;

const parsed = parseBuildPayload({ id: 7, ref: 'main', sha: '0123456789abcdef', name: 'test', token: 'job-token', project_id: 1, repo_url: 'http://x/a/b.git' });
if (!parsed.ok) throw new Error(parsed.message);
const build: BuildPayload = parsed.build;

beforeEach(async () => {
  mock = mockCoordinator();
  stateDir = await mkdtemp(join(tmpdir(), 'sender-edges-'));
  // State updates (`running`, the final one) are accepted throughout.
  mock.pool.intercept({ path: `${API}/builds/7.json`, method: 'PUT' }).reply(200, '{}').persist();
});
afterEach(async () => {
  await trace?.finish('success');
  trace = undefined;
  await mock.close();
  await rm(stateDir, { recursive: true, force: true });
});

function start(): Promise<JobTrace> {
  return startTrace({ build, client: mock.client, runnerToken: 'runner-token', stateDir, signal: new AbortController().signal, updateIntervalMs: 10, keepaliveIntervalMs: 60_000 });
}

/** A server's PATCH endpoint: stores what continues its trace, answers 416 with its length otherwise. */
function patchEndpoint(answer: (stored: number, start: number, end: number) => { status: number; headers?: Record<string, string> } | undefined) {
  const seen: string[] = [];
  let stored = '';
  mock.pool
    .intercept({ path: `${API}/builds/7/trace.txt`, method: 'PATCH' })
    .reply(({ headers, body }) => {
      const range = (headers as Record<string, string>)['content-range'] ?? '';
      seen.push(range);
      const [start, end] = range.split('-').map(Number) as [number, number];
      if (start !== Buffer.byteLength(stored)) return { statusCode: 416, data: '', responseOptions: { headers: { range: `0-${Buffer.byteLength(stored)}` } } };
      stored += Buffer.from(body as Uint8Array).toString('utf8');
      const special = answer(seen.length, start, end);
      return { statusCode: special?.status ?? 202, data: '', responseOptions: { headers: { range: `0-${Buffer.byteLength(stored)}`, ...special?.headers } } };
    })
    .persist();
  return { seen, stored: () => stored };
}

describe('the live trace sender on the wire', () => {
  it('resumes from the server\'s length after an acknowledgement was lost, sending nothing twice', async () => {
    // The first PATCH is stored, but its answer is a proxy's 502.
    const server = patchEndpoint((nth) => (nth === 1 ? { status: 502 } : undefined));
    trace = await start();
    trace.write('hello\n');
    await waitFor('the retry of the first PATCH', () => server.seen.length >= 2);
    trace.write('world\n');
    await waitFor('the second line', () => server.stored() === 'hello\nworld\n');
    // The retry of the same range met a 416 that said the server had it; the next PATCH went on from there.
    expect(server.seen).toEqual(['0-6', '0-6', '6-12']);
    expect(trace.cancelSignal.aborted).toBe(false);
  });

  it('stops the job when an accepted PATCH says in Build-Status that the server canceled it', async () => {
    patchEndpoint(() => ({ status: 202, headers: { 'build-status': 'canceled' } }));
    trace = await start();
    trace.write('working\n');
    await waitFor('the cancel', () => trace!.cancelSignal.aborted);
    expect(trace.cancelSignal.reason).toMatchObject({ code: 'JOB_CANCELED' });
  });
});
