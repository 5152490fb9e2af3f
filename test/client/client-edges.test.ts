/**
 * The runner API client's paths for answers and failures a real server does not give on demand,
 * intercepted at the HTTP layer by undici's MockAgent: Retry-After, 416 resync, cancel through the
 * Build-Status header, timeouts of each kind, connections closed mid-answer, answers lost after the
 * server applied the request. The same paths against the reference server are in the other files.
 */
import { Writable } from 'node:stream';
import { errors } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reportBuildFailed } from '../../src/agent/job/report-failed.js';
import { createLogger } from '../../src/log/index.js';
import { sendFinalUpdate, textTrace } from '../../src/trace/final.js';
import { API, bodyText, mockCoordinator, type MockCoordinator } from '../helpers/mock-coordinator.js';

let mock: MockCoordinator;
beforeEach(() => {
  mock = mockCoordinator();
});
afterEach(async () => {
  await mock.close();
});

/** A logger whose lines the test reads. */
function capturedLog(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
  return { logger: createLogger({ level: 'debug', destination }), text: () => lines.join('') };
}

const FAST = { baseMs: 1, maxMs: 2 };

describe('answers the client classifies', () => {
  it('keeps how long a 503 or 429 asks the runner to wait, as a retryable answer', async () => {
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).reply(503, 'busy', { headers: { 'retry-after': '30' } });
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).reply(429, '', { headers: { 'retry-after': 'Thu, 01 Jan 2099 00:00:00 GMT' } });
    const busy = await mock.client.verifyRunner('token');
    expect(busy).toMatchObject({ status: 503, outcome: 'retry', retryAfterMs: 30_000, alive: undefined });
    const limited = await mock.client.verifyRunner('token');
    expect(limited.outcome).toBe('retry');
    expect(limited.retryAfterMs).toBeGreaterThan(365 * 24 * 3600 * 1000);
  });

  it('reads a 416 on a trace PATCH as the length the server has, to resume from', async () => {
    mock.pool.intercept({ path: `${API}/builds/7/trace.txt`, method: 'PATCH', headers: { 'content-range': '10-15' } }).reply(416, '', { headers: { range: '0-12' } });
    const result = await mock.client.patchTrace(7, 'job-token', 10, Buffer.from('hello'));
    expect(result).toMatchObject({ status: 416, outcome: 'final', serverLength: 12 });
  });

  it('sees the server cancel the job in the Build-Status header of an accepted PATCH', async () => {
    mock.pool.intercept({ path: `${API}/builds/7/trace.txt`, method: 'PATCH' }).reply(202, '', { headers: { range: '0-5', 'build-status': 'canceled' } });
    const result = await mock.client.patchTrace(7, 'job-token', 0, Buffer.from('hello'));
    expect(result).toMatchObject({ status: 202, outcome: 'ok', serverLength: 5, buildStatus: 'canceled' });
  });
});

describe('transport failures', () => {
  it('gives the long poll its own headers deadline, and says which deadline ran out', async () => {
    mock.pool.intercept({ path: `${API}/builds/register.json`, method: 'POST' }).replyWithError(new errors.HeadersTimeoutError());
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).replyWithError(new errors.HeadersTimeoutError());
    const poll = await mock.client.requestBuild('token', undefined);
    expect(poll).toMatchObject({ kind: 'error', status: -1, outcome: 'retry' });
    expect(poll.error?.message).toBe('no response headers within 120 s from coordinator.test');
    expect((poll.error as { code?: string }).code).toBe('UND_ERR_HEADERS_TIMEOUT');
    const verify = await mock.client.verifyRunner('token');
    expect(verify.error?.message).toBe('no response headers within 60 s from coordinator.test');
  });

  it('reports a stalled body, a connection closed mid-answer and a refused connection as retryable', async () => {
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).replyWithError(new errors.BodyTimeoutError());
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).replyWithError(new errors.SocketError('other side closed'));
    mock.pool.intercept({ path: `${API}/builds/-1`, method: 'PUT' }).replyWithError(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:80'), { code: 'ECONNREFUSED' }));
    const stalled = await mock.client.verifyRunner('token');
    const closed = await mock.client.verifyRunner('token');
    const refused = await mock.client.verifyRunner('token');
    for (const result of [stalled, closed, refused]) expect(result).toMatchObject({ status: -1, outcome: 'retry', alive: undefined });
    expect(stalled.error?.message).toBe('no response data for 60 s from coordinator.test');
    expect(closed.error?.message).toBe('the connection to coordinator.test closed before the answer was complete (other side closed)');
    expect(refused.error?.message).toBe('connect ECONNREFUSED 10.0.0.1:80');
  });
});

describe('the final update on the wire', () => {
  it('retries a lost answer and a 503, then reads a 404 as most likely applied, not as a refusal', async () => {
    const path = `${API}/builds/7.json`;
    const bodies: string[] = [];
    const record = async ({ body }: { body?: unknown }): Promise<string> => (bodies.push(await bodyText(body)), '');
    mock.pool.intercept({ path, method: 'PUT' }).replyWithError(new errors.SocketError('other side closed'));
    mock.pool.intercept({ path, method: 'PUT' }).reply(503, record, { headers: { 'retry-after': '0' } });
    mock.pool.intercept({ path, method: 'PUT' }).reply(404, record);
    const log = capturedLog();
    const statuses: number[] = [];
    const result = await sendFinalUpdate({
      client: mock.client, api: 'v1', job: { id: 7, token: 'job-token', runnerToken: 'runner-token' }, state: 'success', trace: textTrace('all done\n'),
      deadlineMs: 60_000, requestTimeoutMs: 10_000, logger: log.logger, policy: FAST, onAttempt: (status) => statuses.push(status),
    });
    expect(statuses).toEqual([-1, 503, 404]);
    expect(result).toEqual({ delivered: false, status: 404, refused: true });
    expect(log.text()).toContain('most likely applied by an earlier attempt whose answer was lost');
    expect(log.text()).not.toContain('refused the final update');
    expect(bodies.map((b) => JSON.parse(b) as { state: string; trace: string })).toEqual([
      expect.objectContaining({ state: 'success', trace: 'all done\n' }),
      expect.objectContaining({ state: 'success', trace: 'all done\n' }),
    ]);
  });

  it('reports a build that cannot run through the same final update, retrying a 502', async () => {
    const path = `${API}/builds/9.json`;
    let sent = '';
    mock.pool.intercept({ path, method: 'PUT' }).reply(502, 'bad gateway');
    mock.pool.intercept({ path, method: 'PUT' }).reply(200, async ({ body }) => ((sent = await bodyText(body)), '{}'));
    const reported = await reportBuildFailed(mock.client, { name: 'r1', token: 'runner-token' }, { id: 9 }, 'the payload has no sha', new AbortController().signal);
    expect(reported).toBe(true);
    const body = JSON.parse(sent) as { state: string; trace: string; token: string };
    expect(body.state).toBe('failed');
    expect(body.token).toBe('runner-token');
    expect(body.trace).toContain('ERROR: Job failed: the payload has no sha');
    expect(mock.agent.pendingInterceptors()).toEqual([]);
  });
});
