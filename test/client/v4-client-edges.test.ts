/**
 * The v4 client's paths for answers the reference server does not give on demand, intercepted at the
 * HTTP layer by undici's MockAgent: the wire form of each call, 416 resync, 202 repeats of the final
 * update, 409/422/429 with Retry-After, Job-Status cancels, lost acknowledgements, registration and
 * verification answers of older servers, and which API a server speaks.
 */
import { crc32 } from 'node:zlib';
import { MockAgent, errors } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectRunnerApi, createRunnerApi } from '../../src/client/connect.js';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { RunnerApiV4Client } from '../../src/client/v4/client.js';
import { silentLogger } from '../../src/log/index.js';
import { sendFinalUpdate, textTrace } from '../../src/trace/final.js';
import { TraceSender } from '../../src/trace/sender.js';
import { bodyText, MOCK_ORIGIN } from '../helpers/mock-coordinator.js';

const V4 = '/api/v4';
const FAST = { baseMs: 1, maxMs: 2 };
const JOB = { id: 7, token: 'job-token', runnerToken: 'runner-token' };

let agent: MockAgent;
let client: RunnerApiV4Client;
beforeEach(() => {
  agent = new MockAgent({ enableCallHistory: true });
  agent.disableNetConnect();
  client = new RunnerApiV4Client({ url: MOCK_ORIGIN, executor: 'shell', systemId: 's_0123456789ab', dispatcher: agent });
});
afterEach(async () => {
  await client.close();
  await agent.close();
});

const pool = () => agent.get(MOCK_ORIGIN);

/** The JSON bodies of the calls to `path` so far. */
async function sentBodies(path: string): Promise<Array<Record<string, unknown>>> {
  const calls = agent.getCallHistory()?.filterCalls({ path }) ?? [];
  return Promise.all(calls.map(async (call) => JSON.parse(await bodyText(call.body)) as Record<string, unknown>));
}

describe('the v4 wire', () => {
  it('asks for a job with its info, system id and last update, and maps the job it gets', async () => {
    pool().intercept({ path: `${V4}/jobs/request`, method: 'POST' }).reply(204, '', { headers: { 'x-gitlab-last-update': 'abc' } });
    const none = await client.requestBuild('runner-token', 'prev');
    expect(none).toMatchObject({ kind: 'none', status: 204, lastUpdate: 'abc' });
    const [body] = await sentBodies(`${V4}/jobs/request`);
    expect(body).toMatchObject({ token: 'runner-token', system_id: 's_0123456789ab', last_update: 'prev', info: { name: 'ci-runner', executor: 'shell', shell: 'bash', features: { cancel_gracefully: true, trace_checksum: true } } });
  });

  it('sends a trace part with an inclusive Content-Range and the job token, and reads Job-Status and the interval', async () => {
    pool()
      .intercept({ path: `${V4}/jobs/7/trace`, method: 'PATCH', headers: { 'content-range': '10-14', 'job-token': 'job-token' } })
      .reply(202, '', { headers: { range: '0-15', 'job-status': 'canceling', 'x-gitlab-trace-update-interval': '3' } });
    const result = await client.patchTrace(7, 'job-token', 10, Buffer.from('hello'));
    expect(result).toMatchObject({ status: 202, outcome: 'ok', serverLength: 15, cancel: 'graceful', updateIntervalMs: 3000 });
  });

  it('reads a 403 with Job-Status canceled as stop now', async () => {
    pool().intercept({ path: `${V4}/jobs/7`, method: 'PUT' }).reply(403, '{"message":"403 Forbidden - Job is not processing on runner"}', { headers: { 'job-status': 'canceled' } });
    const result = await client.updateJob(JOB, { state: 'running', output: { checksum: 'crc32:00000000', bytesize: 0 } });
    expect(result).toMatchObject({ status: 403, outcome: 'final', cancel: 'now' });
    const [body] = await sentBodies(`${V4}/jobs/7`);
    expect(body).toMatchObject({ token: 'job-token', state: 'running', checksum: 'crc32:00000000', output: { checksum: 'crc32:00000000', bytesize: 0 } });
  });

  it('keeps how long a 409, 422 or 429 asks the runner to wait (Retry-After or RateLimit-ResetTime), as retryable', async () => {
    pool().intercept({ path: `${V4}/jobs/request`, method: 'POST' }).reply(409, '{"message":"409 Conflict"}', { headers: { 'retry-after': '2' } });
    pool().intercept({ path: `${V4}/jobs/request`, method: 'POST' }).reply(422, '{}', { headers: { 'retry-after': '5' } });
    pool().intercept({ path: `${V4}/jobs/request`, method: 'POST' }).reply(429, '', { headers: { 'ratelimit-resettime': new Date(Date.now() + 60_000).toUTCString() } });
    const conflict = await client.requestBuild('runner-token', undefined);
    const refused = await client.requestBuild('runner-token', undefined);
    const limited = await client.requestBuild('runner-token', undefined);
    expect(conflict).toMatchObject({ kind: 'error', status: 409, outcome: 'retry', retryAfterMs: 2000 });
    expect(refused).toMatchObject({ kind: 'error', status: 422, outcome: 'retry', retryAfterMs: 5000 });
    expect(limited).toMatchObject({ kind: 'error', status: 429, outcome: 'retry' });
    expect(limited.retryAfterMs).toBeGreaterThan(50_000);
  });

  it('uploads an artifacts entry with its type, format and expiry, and downloads with the dependency token, following a redirect without it', async () => {
    pool().intercept({ path: `${V4}/jobs/7/artifacts?direct_download=true`, method: 'GET', headers: { 'job-token': 'dep-token' } }).reply(302, '', { headers: { location: 'http://storage.test/signed/blob?sig=1' } });
    agent.get('http://storage.test').intercept({ path: '/signed/blob?sig=1', method: 'GET' }).reply(200, 'archive bytes');
    const { mkdtemp, readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join((await import('node:os')).tmpdir(), 'v4-client-'));
    const result = await client.downloadArtifacts(7, 'dep-token', join(dir, 'a.zip'));
    expect(result).toMatchObject({ status: 200, outcome: 'ok', size: 13 });
    expect(await readFile(join(dir, 'a.zip'), 'utf8')).toBe('archive bytes');
    const redirected = agent.getCallHistory()?.filterCalls({ origin: 'http://storage.test' }) ?? [];
    expect(redirected).toHaveLength(1);
    expect(redirected[0]?.headers ?? {}).not.toHaveProperty('job-token');

    const { writeFile } = await import('node:fs/promises');
    await writeFile(join(dir, 'build.env.gz'), 'gzip bytes');
    pool().intercept({ path: `${V4}/jobs/7/artifacts?artifact_format=gzip&artifact_type=dotenv&expire_in=1+day`, method: 'POST', headers: { 'job-token': 'job-token' } }).reply(201, '{}', { headers: { 'content-type': 'application/json' } });
    const upload = await client.uploadArtifacts(7, 'job-token', { path: join(dir, 'build.env.gz'), filename: 'dotenv.gz', expireIn: '1 day', artifactType: 'dotenv', artifactFormat: 'gzip' });
    expect(upload).toMatchObject({ status: 201, outcome: 'ok' });
  });
});

describe('the trace sender over v4', () => {
  it('resumes from the Range of a 416 and never sends an empty part', async () => {
    const text = 'abcdefghij';
    pool().intercept({ path: `${V4}/jobs/7/trace`, method: 'PATCH', headers: { 'content-range': '0-9' } }).reply(416, '{"error":"416 Range Not Satisfiable"}', { headers: { range: '0-4' } });
    pool().intercept({ path: `${V4}/jobs/7/trace`, method: 'PATCH', headers: { 'content-range': '4-9' } }).reply(202, '', { headers: { range: '0-10' } });
    const sender = new TraceSender({ client, api: 'v4', job: JOB, trace: textTrace(text), updateIntervalMs: 10, keepaliveIntervalMs: 60_000, requestTimeoutMs: 5000, signal: new AbortController().signal, logger: silentLogger() });
    expect(await sender.drain(AbortSignal.timeout(10_000))).toBe(true);
    expect(sender.acknowledged).toBe(10);
    expect(agent.pendingInterceptors()).toEqual([]);
  });
});

describe('the final update over v4', () => {
  it('sends the rest of the trace, then repeats the same update while the server answers 202', async () => {
    const text = 'all done\n';
    pool().intercept({ path: `${V4}/jobs/7/trace`, method: 'PATCH', headers: { 'content-range': '0-8' } }).reply(202, '', { headers: { range: '0-9' } });
    pool().intercept({ path: `${V4}/jobs/7`, method: 'PUT' }).reply(202, '202', { headers: { 'x-gitlab-trace-update-interval': '1' } }).times(2);
    pool().intercept({ path: `${V4}/jobs/7`, method: 'PUT' }).reply(200, '200');
    const statuses: number[] = [];
    const result = await sendFinalUpdate({
      client, api: 'v4', job: JOB, state: 'failed', failure: { reason: 'script_failure', exitCode: 3 }, acceptedReasons: ['script_failure'],
      trace: textTrace(text), deadlineMs: 60_000, requestTimeoutMs: 10_000, logger: silentLogger(), policy: FAST, onAttempt: (status) => statuses.push(status),
    });
    expect(result).toEqual({ delivered: true, status: 200, refused: false });
    expect(statuses).toEqual([202, 202, 200]);
    const bodies = await sentBodies(`${V4}/jobs/7`);
    const expected = { token: 'job-token', state: 'failed', failure_reason: 'script_failure', exit_code: 3, output: { checksum: `crc32:${crc32(text).toString(16).padStart(8, '0')}`, bytesize: 9 } };
    for (const body of bodies) expect(body).toMatchObject(expected);
  });

  it('maps a reason the server does not list, and reads a 403 after a lost answer as most likely applied', async () => {
    pool().intercept({ path: `${V4}/jobs/7`, method: 'PUT' }).replyWithError(new errors.SocketError('other side closed'));
    pool().intercept({ path: `${V4}/jobs/7`, method: 'PUT' }).reply(403, '{"message":"403 Forbidden"}', { headers: { 'job-status': 'failed' } });
    const result = await sendFinalUpdate({
      client, api: 'v4', job: JOB, state: 'failed', failure: { reason: 'image_pull_failure' }, acceptedReasons: ['script_failure'], acknowledged: 0,
      trace: textTrace(''), deadlineMs: 60_000, requestTimeoutMs: 10_000, logger: silentLogger(), policy: FAST,
    });
    expect(result).toMatchObject({ delivered: false, refused: true, status: 403 });
    const bodies = await sentBodies(`${V4}/jobs/7`);
    expect(bodies[0]).toMatchObject({ failure_reason: 'runner_system_failure' });
    expect(bodies[0]).not.toHaveProperty('exit_code');
  });
});

describe('registering and verifying over v4', () => {
  it('takes the JSON verify answer of GitLab 16+ and the plain one of older servers, and 403 as removed', async () => {
    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(200, '{"id":12,"token":"glrt-abc","token_expires_at":"2030-01-01T00:00:00Z"}', { headers: { 'content-type': 'application/json' } });
    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(200, '200');
    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(403, '{"message":"403 Forbidden"}');
    expect(await client.verifyRunner('glrt-abc')).toMatchObject({ alive: true, runner: { id: 12, token: 'glrt-abc', tokenExpiresAt: '2030-01-01T00:00:00Z' } });
    const old = await client.verifyRunner('glrt-abc');
    expect(old.alive).toBe(true);
    expect(old.runner).toBeUndefined();
    expect(await client.verifyRunner('glrt-abc')).toMatchObject({ alive: false, outcome: 'final' });
    const [body] = await sentBodies(`${V4}/runners/verify`);
    expect(body).toMatchObject({ token: 'glrt-abc', system_id: 's_0123456789ab', info: { name: 'ci-runner' } });
  });

  it('reads 410 (registration tokens disabled) as final', async () => {
    pool().intercept({ path: `${V4}/runners`, method: 'POST' }).reply(410, '{"message":"410 Gone"}');
    expect(await client.registerRunner({ token: 'reg', runUntagged: true })).toMatchObject({ status: 410, outcome: 'final' });
  });
});

describe('which API a server speaks', () => {
  it('takes v1 when /api/v4 is unknown, v4 when it refuses the empty token, and asks again after no answer', async () => {
    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(404, 'Not Found');
    const v1 = await connectRunnerApi({ url: MOCK_ORIGIN, dispatcher: agent });
    expect(v1).toBeInstanceOf(RunnerApiClient);
    await v1.close();

    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(502, 'bad gateway');
    pool().intercept({ path: `${V4}/runners/verify`, method: 'POST' }).reply(403, '{"message":"403 Forbidden"}');
    pool().intercept({ path: `${V4}/jobs/request`, method: 'POST' }).reply(204, '');
    const detecting = createRunnerApi({ url: MOCK_ORIGIN, dispatcher: agent });
    const first = await detecting.requestBuild('runner-token', undefined);
    expect(first).toMatchObject({ kind: 'error', status: 502, outcome: 'retry' });
    expect(() => detecting.api).toThrow(/not known/);
    const second = await detecting.requestBuild('runner-token', undefined);
    expect(second).toMatchObject({ kind: 'none', status: 204 });
    expect(detecting.api).toBe('v4');
    const [probe] = await sentBodies(`${V4}/runners/verify`);
    expect(probe).toMatchObject({ token: '' });
    await detecting.close();
  });
});
