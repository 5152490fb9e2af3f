/** Fault injection (`FaultRule`): every action, percentages, counts, build filters. */
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';

let t: TestServer;
let runner: LegacyRunner;
beforeEach(async () => {
  t = await startTestServer({ faultSeed: 42 });
  runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
});
afterEach(async () => {
  await t.close();
});

async function newBuild(): Promise<BuildPayload> {
  await t.pipeline('test:\n  script:\n    - echo hello\n');
  const build = await runner.poll();
  if (!build) throw new Error('expected a build');
  return build;
}

describe('fault injection', () => {
  it('error: answers the status without processing', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'update_build', action: 'error' });
    expect(await runner.update(build, 'success', 'trace')).toBe(500);
    expect(t.server.getJob(build.id)).toMatchObject({ status: 'running', trace_size: 0 });
    t.server.faults.clear();
    expect(await runner.update(build, 'success', 'trace')).toBe(200);
  });

  it('error with a status and a count fires that many times, then stops', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 502, count: 2 });
    expect((await runner.patch(build, 0, 'abc')).status).toBe(502);
    expect((await runner.patch(build, 0, 'abc')).status).toBe(502);
    expect((await runner.patch(build, 0, 'abc')).status).toBe(202);
  });

  it('apply_then_error: the PATCH is stored but answered 500, so the resend gets 416 with the real length', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'patch_trace', action: 'apply_then_error', count: 1 });
    expect((await runner.patch(build, 0, 'hello')).status).toBe(500);
    const resend = await runner.patch(build, 0, 'hello');
    expect(resend).toMatchObject({ status: 416, range: '0-5' });
    expect((await t.server.getTrace(build.id)).toString()).toBe('hello');
  });

  it('apply_then_error on E5 changes the state even though the answer is an error', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'update_build', action: 'apply_then_error', status: 503 });
    expect(await runner.update(build, 'success', 'done')).toBe(503);
    expect(t.server.getJob(build.id)?.status).toBe('success');
  });

  it('error on upload_artifacts stores nothing', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'upload_artifacts', action: 'error' });
    expect(await runner.upload(build, Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000')))).toBe(500);
    expect(t.server.getJob(build.id)?.artifacts).toBeNull();
  });

  it('close: processes the request, then cuts the response after the headers', async () => {
    await t.pipeline('test:\n  script:\n    - echo hello\n');
    t.server.faults.add({ endpoint: 'request_build', action: 'close', count: 1 });
    const cut = api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runner.token } });
    await expect(cut).rejects.toThrow();
    // The build was assigned all the same: the lost-201 case of §2.4.
    expect(t.server.listJobs('running')).toHaveLength(1);
  });

  it('close on a download: sends the headers and part of the file, then cuts the connection', async () => {
    const build = await newBuild();
    const file = Buffer.alloc(100_000, 7);
    expect(await runner.upload(build, file)).toBe(201);
    t.server.faults.add({ endpoint: 'download_artifacts', action: 'close', count: 1 });
    await expect(runner.download(build.id, build.token)).rejects.toThrow();
    const again = await runner.download(build.id, build.token);
    expect(again.status).toBe(200);
    expect(again.body.equals(file)).toBe(true);
  });

  it('hang: never answers until the client gives up; the server keeps serving others', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'patch_trace', action: 'hang', count: 1 });
    const hung = api(t.url, 'PATCH', `/builds/${build.id}/trace.txt`, {
      body: 'x',
      headers: { 'content-range': '0-1', 'build-token': build.token },
      signal: AbortSignal.timeout(300),
    });
    await expect(hung).rejects.toThrow();
    expect(t.server.getJob(build.id)?.trace_size).toBe(0);
    expect((await runner.patch(build, 0, 'x')).status).toBe(202);
  });

  it('hang: the held request ends when the server closes', async () => {
    t.server.faults.add({ endpoint: 'request_build', action: 'hang' });
    const hung = api(t.url, 'POST', '/builds/register.json', { json: { token: runner.token } }).then(
      () => 'answered',
      () => 'cut',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await t.server.close();
    expect(await hung).toBe('cut');
  });

  it('delay: waits, then processes normally', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'patch_trace', action: 'delay', delayMs: 300 });
    const started = Date.now();
    expect((await runner.patch(build, 0, 'late')).status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(t.server.getJob(build.id)?.trace_size).toBe(4);
  });

  it('percent: fires for a share of requests, repeatably with a seed', async () => {
    const build = await newBuild();
    t.server.faults.add({ endpoint: 'patch_trace', action: 'error', percent: 50 });
    const statuses: number[] = [];
    let offset = 0;
    for (let i = 0; i < 40; i++) {
      const result = await runner.patch(build, offset, 'x');
      statuses.push(result.status);
      if (result.status === 202) offset++;
    }
    const errors = statuses.filter((s) => s === 500).length;
    expect(errors).toBeGreaterThan(5);
    expect(errors).toBeLessThan(35);
    expect(t.server.getJob(build.id)?.trace_size).toBe(40 - errors);
  });

  it('buildId: only requests about that build are affected; remove() stops a rule', async () => {
    const a = await newBuild();
    const b = await newBuild();
    const id = t.server.faults.add({ endpoint: '*', action: 'error', buildId: a.id });
    expect((await runner.patch(a, 0, 'x')).status).toBe(500);
    expect((await runner.patch(b, 0, 'x')).status).toBe(202);
    t.server.faults.remove(id);
    expect((await runner.patch(a, 0, 'x')).status).toBe(202);
  });

  it('the * endpoint matches every runner route', async () => {
    t.server.faults.add({ endpoint: '*', action: 'error', status: 503 });
    expect((await api(t.url, 'PUT', '/builds/-1', { json: { token: runner.token } })).status).toBe(503);
    expect((await api(t.url, 'POST', '/runners/register.json', { json: { token: t.server.registrationToken } })).status).toBe(503);
  });

  it('answers a faulted 429 with Retry-After and RateLimit-ResetTime, on API v4 as on v1', async () => {
    t.server.faults.add({ endpoint: 'request_build', action: 'error', status: 429, count: 2 });
    for (const path of ['/ci/api/v1/builds/register.json', '/api/v4/jobs/request']) {
      const response = await raw(t.url, 'POST', path, { json: { token: runner.token } });
      expect(response.status).toBe(429);
      expect(response.headers['retry-after']).toBe('1');
      expect(Date.parse(String(response.headers['ratelimit-resettime']))).toBeGreaterThan(Date.now() - 2000);
    }
    expect((await raw(t.url, 'POST', '/api/v4/jobs/request', { json: { token: runner.token } })).status).toBe(204);
  });

  it('git: an error rule refuses clones until it is removed', async () => {
    const build = await newBuild();
    const id = t.server.faults.add({ endpoint: 'git', action: 'error', status: 503 });
    const env = { GIT_TERMINAL_PROMPT: '0' };
    expect((await execa('git', ['ls-remote', build.repo_url], { reject: false, env })).exitCode).not.toBe(0);
    t.server.faults.remove(id);
    expect((await execa('git', ['ls-remote', build.repo_url], { reject: false, env })).exitCode).toBe(0);
  });

  it('faults given as options apply from the start', async () => {
    await t.close();
    t = await startTestServer({ faults: [{ endpoint: 'register_runner', action: 'error', status: 500, count: 1 }] });
    await expect(t.registerRunner()).rejects.toThrow(/500/);
    await expect(t.registerRunner()).resolves.toHaveProperty('token');
  });
});
