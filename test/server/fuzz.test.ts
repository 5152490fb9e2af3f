/**
 * Throws seeded random bodies and headers at every route, then checks that the server never answered
 * 5xx, still serves a full build correctly, and that its state is consistent: bad input
 * never crashes it and never corrupts state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';
import { raw } from './raw-http.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ maxArtifactsSize: 4096 });
});
afterAll(async () => {
  await t.close();
});

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('fuzzing every route', () => {
  it('survives random requests without a 5xx and keeps its state consistent', async () => {
    const random = prng(20_170_704);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const int = (max: number): number => Math.floor(random() * max);

    const runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
    await t.pipeline('stages: [a, b]\none:\n  stage: a\n  script: [x]\n  artifacts:\n    paths: [x]\ntwo:\n  stage: a\n  script: [y]\nthree:\n  stage: b\n  script: [z]\n');
    let build = (await runner.poll()) as BuildPayload;
    const ids = () => [String(build.id), String(build.id), String(build.id), String(build.id), String(build.id), String(build.id), '-1', '0', '999999999', '99999999999999999999999', 'abc', '1.5', '%00'];
    const tokens = () => [runner.token, runner.token, build.token, build.token, build.token, t.server.registrationToken, '', 'x', 'ø', '0'.repeat(5000)];
    const routes = (): Array<[string, string]> => [
      ['POST', '/ci/api/v1/runners/register'], ['POST', '/ci/api/v1/runners/register.json'], ['DELETE', '/ci/api/v1/runners/delete'],
      ['POST', '/ci/api/v1/builds/register.json'], ['PUT', `/ci/api/v1/builds/${pick(ids())}`], ['PUT', `/ci/api/v1/builds/${pick(ids())}.json`],
      ['PATCH', `/ci/api/v1/builds/${pick(ids())}/trace.txt`], ['POST', `/ci/api/v1/builds/${pick(ids())}/artifacts`],
      ['POST', `/ci/api/v1/builds/${pick(ids())}/artifacts?expire_in=${pick(['1+week', 'garbage', '', '%zz'])}`],
      ['GET', `/ci/api/v1/builds/${pick(ids())}/artifacts`], ['DELETE', `/ci/api/v1/builds/${pick(ids())}/artifacts`],
      ['POST', '/admin/api/pipelines'], ['GET', `/admin/api/pipelines/${pick(ids())}`], ['GET', '/admin/api/jobs?status=running'],
      ['GET', `/admin/api/jobs/${pick(ids())}`], ['GET', `/admin/api/jobs/${pick(ids())}/trace`], ['GET', `/admin/api/jobs/${pick(ids())}/artifacts`],
      ['POST', `/admin/api/jobs/${pick(ids())}/cancel`],
      ['GET', '/group/project.git/info/refs?service=git-upload-pack'], ['POST', '/group/project.git/git-upload-pack'], ['GET', '/nope/x.git/info/refs'],
      ['GET', '/ci/api/v1'], ['GET', '/ci/api/v1/'], ['GET', '/'], ['PATCH', '/ci/api/v1/builds//trace.txt'], ['PATCH', '/ci/api/v1/builds/1/trace.txt.json'],
    ];
    const jsonBodies = (): string[] => [
      JSON.stringify({ token: pick(tokens()) }),
      JSON.stringify({ token: pick(tokens()), state: pick(['running', 'success', 'failed', 'canceled', 7, null]), trace: pick(['t', 5, null, ['a'], 'x'.repeat(2000)]) }),
      JSON.stringify({ token: { nested: true }, info: 'not an object', tag_list: pick([7, ['a', 3], 'a,,b', null]), run_untagged: pick(['maybe', 1, false]) }),
      JSON.stringify({ token: pick(tokens()), last_update: pick([42, '', 'abc', null]) }),
      JSON.stringify({ config: pick(['a:\n  script: [x]\n', 'x: [', 42, '']), project: pick(['group/project', 5, 'no/such']), variables: pick([{ A: 'b' }, 'str', [1]]) }),
      JSON.stringify([1, 2, 3]),
      'null',
      '"just a string"',
      '{"token":',
      '{"__proto__":{"polluted":true},"token":"x"}',
    ];
    const randomBytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
    const multipart = (): string =>
      pick([
        '--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPKDATA\r\n--b--\r\n',
        '--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n' + 'Z'.repeat(5000) + '\r\n--b--\r\n',
        '--b\r\nContent-Disposition: form-data; name="token"\r\n\r\n' + build.token + '\r\n--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--b--\r\n',
        '--b\r\nbroken headers\r\n\r\n',
        '--b--',
        '',
      ]);

    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      if (i % 40 === 39) {
        // Keep a running build around so the fuzzer reaches past the state checks.
        await t.pipeline('fresh:\n  script: [x]\n');
        build = (await runner.poll()) ?? build;
      }
      const [usual, path] = pick(routes());
      const method = random() < 0.8 ? usual : pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
      const headers: Record<string, string> = {};
      const kind = int(6);
      let body: string | Buffer | undefined;
      if (kind === 0) {
        headers['content-type'] = 'application/json';
        body = pick(jsonBodies());
      } else if (kind === 1) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = pick([`token=${encodeURIComponent(pick(tokens()))}&state=success`, '%%%=&&=', 'a=b&a=c', '']);
      } else if (kind === 2) {
        headers['content-type'] = pick(['multipart/form-data; boundary=b', 'multipart/form-data', 'multipart/form-data; boundary=']);
        body = multipart();
      } else if (kind === 3) {
        headers['content-type'] = pick(['text/plain', 'application/octet-stream', 'x/y; z', '']);
        body = randomBytes(int(300));
      } else if (kind === 4) {
        headers['content-type'] = 'application/json; charset=utf-8';
        body = randomBytes(int(100));
      }
      if (random() < 0.5) headers['content-range'] = pick(['0-1', `${int(50)}-${int(50)}`, 'bytes=0-1', '-', '1-0', '00-00', '99999999999999999999-1', 'x']);
      if (random() < 0.7) headers['build-token'] = pick(tokens());
      if (random() < 0.5) headers['private-token'] = pick([t.server.adminToken, t.server.adminToken, 'bad', '']);
      if (random() < 0.2) headers.authorization = `Basic ${Buffer.from(`gitlab-ci-token:${pick(tokens())}`).toString('base64')}`;
      if (method === 'GET' || method === 'HEAD') body = undefined;
      const response = await raw(t.url, method, path, { headers, ...(body !== undefined ? { body } : {}) });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `${method} ${path} ${JSON.stringify(headers)} ${String(body).slice(0, 200)}`).toBeLessThan(500);
    }
    // A second round with valid credentials and malformed details, to reach past the token checks.
    for (let i = 0; i < 200; i++) {
      if (i % 25 === 0) {
        await t.pipeline('deep:\n  script: [x]\n');
        build = (await runner.poll()) ?? build;
      }
      const choice = int(4);
      let response;
      if (choice === 0) {
        const part = randomBytes(int(64));
        const start = pick([build.id, 0, int(200)]);
        response = await raw(t.url, 'PATCH', `/ci/api/v1/builds/${build.id}/trace.txt`, {
          body: part,
          headers: { 'build-token': build.token, 'content-range': pick([`${start}-${start + part.byteLength}`, `${start}-0`, `${start}`, `${start}-x`]) },
        });
      } else if (choice === 1) {
        response = await raw(t.url, 'PUT', `/ci/api/v1/builds/${build.id}.json`, {
          json: { token: runner.token, ...(random() < 0.5 ? { state: pick(['running', 'success', 'failed', 'bogus', 3]) } : {}), ...(random() < 0.5 ? { trace: pick(['abc', '', 'é'.repeat(int(50)), 42, { a: 1 }]) } : {}) },
        });
      } else if (choice === 2) {
        response = await raw(t.url, 'POST', `/ci/api/v1/builds/${build.id}/artifacts${pick(['?', '?expire_in=1+day', '?expire_in=x'])}`, {
          body: multipart(),
          headers: { 'build-token': build.token, 'content-type': pick(['multipart/form-data; boundary=b', 'multipart/form-data; boundary=zz']) },
        });
      } else {
        response = await raw(t.url, 'POST', '/ci/api/v1/builds/register.json', { json: { token: runner.token, last_update: pick(['', 'x', 5, null]), info: pick([null, 'x', { features: 1 }]) } });
      }
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `round 2 choice ${choice}: ${response.text.slice(0, 200)}`).toBeLessThan(500);
    }

    // The fuzzer reached deep paths, not just the front door.
    const successes = [...statuses].filter(([s]) => s < 300).reduce((sum, [, n]) => sum + n, 0);
    expect(successes, JSON.stringify([...statuses])).toBeGreaterThanOrEqual(5);
    for (const status of [400, 403, 404]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);

    // State is consistent: stored traces match their recorded sizes; running builds have a runner.
    for (const job of t.server.listJobs()) {
      expect((await t.server.getTrace(job.id)).byteLength).toBe(job.trace_size);
      if (job.status === 'running') expect(job.runner_id).not.toBeNull();
      expect(['created', 'pending', 'running', 'success', 'failed', 'canceled', 'skipped', 'manual']).toContain(job.status);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // The server still does its job end to end.
    const fresh = new LegacyRunner(t.url, (await t.registerRunner()).token);
    await t.pipeline('after:\n  script: [ok]\n');
    let next = await fresh.poll();
    while (next && next.name !== 'after') {
      await fresh.complete(next, 'success');
      next = await fresh.poll();
    }
    expect(next?.name).toBe('after');
    await fresh.complete(next!, 'success');
    expect(t.server.getJob(next!.id)?.status).toBe('success');
  });
});
