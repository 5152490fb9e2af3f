/** docs/protocol-v4.md §6 (PATCH trace: inclusive Content-Range, 416 resync, Job-Status) and cancel over v4 (§5). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';
import { patchTrace, R14_FEATURES, registerV4, takeJob, updateJob } from './v4-http.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer({ traceUpdateIntervalS: 2 });
  token = (await registerV4(t)).token;
});
afterAll(async () => {
  await t.close();
});

async function newJob(extra: Record<string, unknown> = {}) {
  await t.pipeline('a:\n  script: [echo a]\n  after_script: [echo after]\n');
  return takeJob(t, token, extra);
}

const GRACEFUL = { info: { features: { ...R14_FEATURES, cancel_gracefully: true } } };

describe('V8 PATCH /jobs/:id/trace', () => {
  it('appends with an inclusive Content-Range and answers 202 with Range (a byte count), Job-Status and the interval', async () => {
    const job = await newJob();
    const first = await patchTrace(t, job, 0, 'hello ');
    expect(first.status).toBe(202);
    expect(first.headers.range).toBe('0-6');
    expect(first.headers['job-status']).toBe('running');
    expect(first.headers['x-gitlab-trace-update-interval']).toBe('2');
    // 6-11 is inclusive: bytes 6..11, six of them.
    const second = await patchTrace(t, job, 6, 'world\n', '6-11');
    expect(second.headers.range).toBe('0-12');
    expect((await t.server.getTrace(job.id)).toString()).toBe('hello world\n');
  });

  it('reads only the start: the end of Content-Range is not checked against the body', async () => {
    const job = await newJob();
    const response = await patchTrace(t, job, 0, 'abc', '0-100');
    expect(response.status).toBe(202);
    expect(response.headers.range).toBe('0-3');
  });

  it('answers 416 with Range: 0-<stored> when start is not the stored length, and the runner resyncs from there', async () => {
    const job = await newJob();
    await patchTrace(t, job, 0, 'abcd');
    for (const start of [0, 2, 9]) {
      const response = await patchTrace(t, job, start, 'xyz');
      expect(response.status).toBe(416);
      expect(response.headers.range).toBe('0-4');
      expect(JSON.parse(response.text)).toEqual({ error: '416 Range Not Satisfiable' });
    }
    const resumed = await patchTrace(t, job, 4, 'efgh');
    expect(resumed.status).toBe(202);
    expect((await t.server.getTrace(job.id)).toString()).toBe('abcdefgh');
  });

  it('answers 400 without Content-Range or with a malformed one, storing nothing', async () => {
    const job = await newJob();
    const missing = await patchTrace(t, job, 0, 'x', null);
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.text)).toEqual({ error: '400 Missing header Content-Range' });
    for (const range of ['bytes 0-1', 'a-b', '-1-0', '0-1/2']) expect((await patchTrace(t, job, 0, 'x', range)).status).toBe(400);
    expect(t.server.getJob(job.id)?.trace_size).toBe(0);
  });

  it('answers 403 for a wrong token, an unknown job, and with Job-Status once the job is done', async () => {
    const job = await newJob();
    expect((await patchTrace(t, { id: job.id, token: 'wrong' }, 0, 'x')).status).toBe(403);
    expect((await patchTrace(t, { id: 987_654, token: job.token }, 0, 'x')).status).toBe(403);
    await updateJob(t, job, { state: 'success' });
    const late = await patchTrace(t, job, 0, 'x');
    expect(late.status).toBe(403);
    expect(late.headers['job-status']).toBe('success');
  });

  it('masks the job token in the stored copy without changing its length', async () => {
    const job = await newJob();
    const line = `token ${job.token} end\n`;
    expect((await patchTrace(t, job, 0, line)).headers.range).toBe(`0-${line.length}`);
    const stored = (await t.server.getTrace(job.id)).toString();
    expect(stored).not.toContain(job.token);
    expect(stored.length).toBe(line.length);
  });
});

describe('cancel over v4', () => {
  it('hard-cancels a job whose runner did not announce cancel_gracefully: 403 with Job-Status: canceled on PATCH and PUT', async () => {
    const job = await newJob();
    t.server.cancelJob(job.id);
    expect(t.server.getJob(job.id)?.status).toBe('canceled');
    for (const response of [await patchTrace(t, job, 0, 'x'), await updateJob(t, job, { state: 'running' })]) {
      expect(response.status).toBe(403);
      expect(response.headers['job-status']).toBe('canceled');
    }
  });

  it('tells a runner that announced cancel_gracefully `canceling` on PATCH and keep-alive PUT; its final update ends the job canceled', async () => {
    const job = await newJob(GRACEFUL);
    expect(t.server.cancelJob(job.id)?.status).toBe('canceling');
    const patch = await patchTrace(t, job, 0, 'stopping\n');
    expect(patch.status).toBe(202);
    expect(patch.headers['job-status']).toBe('canceling');
    const keepAlive = await updateJob(t, job, { state: 'running' });
    expect(keepAlive.status).toBe(200);
    expect(keepAlive.headers['job-status']).toBe('canceling');
    // after_script's output still arrives.
    expect((await patchTrace(t, job, 9, 'after\n')).status).toBe(202);
    const final = await updateJob(t, job, { state: 'failed', failure_reason: 'unknown_failure', output: { bytesize: 15 } });
    expect(final.status).toBe(200);
    expect(final.headers['job-status']).toBe('canceled');
    expect(t.server.getJob(job.id)).toMatchObject({ status: 'canceled' });
    expect(t.server.getJob(job.id)?.failure_reason).toBeUndefined();
  });

  it('forces a canceling job when it is canceled again (or with force)', async () => {
    const job = await newJob(GRACEFUL);
    t.server.cancelJob(job.id);
    expect(t.server.cancelJob(job.id)?.status).toBe('canceled');
    expect((await patchTrace(t, job, 0, 'x')).headers['job-status']).toBe('canceled');
    const other = await newJob(GRACEFUL);
    expect(t.server.cancelJob(other.id, { force: true })?.status).toBe('canceled');
  });

  it('a v1 runner hears of the cancel on its next (empty) PATCH, whose 202 carries the update interval', async () => {
    const v1 = (await t.registerRunner()).token;
    await t.pipeline('a:\n  script: [x]\n');
    const build = JSON.parse((await api(t.url, 'POST', '/builds/register.json', { json: { token: v1, info: LEGACY_INFO } })).text) as { id: number; token: string };
    const patch = (): ReturnType<typeof api> =>
      api(t.url, 'PATCH', `/builds/${build.id}/trace.txt`, { body: '', headers: { 'content-type': 'text/plain', 'build-token': build.token, 'content-range': '0-0' } });
    const before = await patch();
    expect(before.headers['build-status']).toBe('running');
    expect(before.headers['x-gitlab-trace-update-interval']).toBe('2');
    t.server.cancelJob(build.id);
    expect((await patch()).headers['build-status']).toBe('canceled');
  });
});
