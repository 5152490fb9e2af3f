/** docs/protocol-v1.md §4.6 (E6 append to the trace), §7.7–§7.8, §12 items 3, 4, 7. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';

let t: TestServer;
let runnerToken: string;
beforeAll(async () => {
  t = await startTestServer();
  runnerToken = (await t.registerRunner()).token;
});
afterAll(async () => {
  await t.close();
});

async function newBuild(): Promise<BuildPayload> {
  await t.pipeline('test:\n  script:\n    - echo hello\n');
  const response = await api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runnerToken } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

function patch(build: { id: number; token: string }, range: string | undefined, body: string | Buffer, extra: Record<string, string> = {}) {
  return api(t.url, 'PATCH', `/builds/${build.id}/trace.txt`, {
    body,
    headers: { 'content-type': 'text/plain', 'build-token': build.token, ...(range !== undefined ? { 'content-range': range } : {}), ...extra },
  });
}

describe('E6 append to the trace', () => {
  it('appends parts and answers 202 with Range and Build-Status', async () => {
    const build = await newBuild();
    const first = await patch(build, '0-6', 'hello ');
    expect(first.status).toBe(202);
    expect(first.headers.range).toBe('0-6');
    expect(first.headers['build-status']).toBe('running');
    const second = await patch(build, '6-12', 'world\n');
    expect(second.headers.range).toBe('0-12');
    expect((await t.server.getTrace(build.id)).toString()).toBe('hello world\n');
  });

  it('accepts an empty keep-alive part', async () => {
    const build = await newBuild();
    await patch(build, '0-3', 'abc');
    const empty = await patch(build, '3-3', '');
    expect(empty.status).toBe(202);
    expect(empty.headers.range).toBe('0-3');
  });

  it('answers 416 with Range: 0-<stored length> when start is not the stored length', async () => {
    const build = await newBuild();
    await patch(build, '0-4', 'abcd');
    for (const range of ['0-4', '2-6', '9-12']) {
      const response = await patch(build, range, 'abcd');
      expect(response.status).toBe(416);
      expect(response.headers.range).toBe('0-4');
      expect(JSON.parse(response.text)).toHaveProperty('message');
    }
    expect((await t.server.getTrace(build.id)).toString()).toBe('abcd');
  });

  it('answers 400 for a missing or malformed Content-Range', async () => {
    const build = await newBuild();
    expect((await patch(build, undefined, 'x')).status).toBe(400);
    for (const range of ['bytes 0-1', '0-', 'a-b', '0-1/2', '-1-0', '']) {
      expect((await patch(build, range, 'x')).status).toBe(400);
    }
    expect(t.server.getJob(build.id)?.trace_size).toBe(0);
  });

  it('does not reject a part whose end disagrees with its length (the server reads only start)', async () => {
    const build = await newBuild();
    const response = await patch(build, '0-100', 'abc');
    expect(response.status).toBe(202);
    expect(response.headers.range).toBe('0-3');
  });

  it('answers 404 for an unknown build and 403 for a wrong or missing token', async () => {
    const build = await newBuild();
    expect((await patch({ id: 999999, token: build.token }, '0-1', 'x')).status).toBe(404);
    expect((await patch({ id: -1, token: build.token }, '0-1', 'x')).status).toBe(404);
    expect((await patch({ id: build.id, token: 'wrong' }, '0-1', 'x')).status).toBe(403);
    const noToken = await api(t.url, 'PATCH', `/builds/${build.id}/trace.txt`, { body: 'x', headers: { 'content-range': '0-1' } });
    expect(noToken.status).toBe(403);
  });

  it('takes the token from a query parameter in preference to the header', async () => {
    const build = await newBuild();
    const response = await api(t.url, 'PATCH', `/builds/${build.id}/trace.txt?token=${build.token}`, {
      body: 'ok',
      headers: { 'content-range': '0-2', 'build-token': 'wrong' },
    });
    expect(response.status).toBe(202);
  });

  it('keeps appending after the build ended and reports its status', async () => {
    const build = await newBuild();
    t.server.cancelJob(build.id);
    const response = await patch(build, '0-5', 'after');
    expect(response.status).toBe(202);
    expect(response.headers['build-status']).toBe('canceled');
    expect(response.headers.range).toBe('0-5');
  });

  it('masks the build token with x of the same length, so offsets stay valid', async () => {
    const build = await newBuild();
    const text = `secret=${build.token}\n`;
    const response = await patch(build, `0-${text.length}`, text);
    expect(response.headers.range).toBe(`0-${text.length}`);
    expect((await t.server.getTrace(build.id)).toString()).toBe(`secret=${'x'.repeat(build.token.length)}\n`);
  });

  it('serialises concurrent parts: exactly one of two parts at the same offset is stored', async () => {
    const build = await newBuild();
    const [a, b] = await Promise.all([patch(build, '0-3', 'AAA'), patch(build, '0-3', 'BBB')]);
    expect([a.status, b.status].sort()).toEqual([202, 416]);
    expect((await t.server.getTrace(build.id)).byteLength).toBe(3);
  });

  it('keeps multi-byte UTF-8 as bytes (Range counts bytes)', async () => {
    const build = await newBuild();
    const bytes = Buffer.from('héllo ✓\n', 'utf8');
    const response = await patch(build, `0-${bytes.byteLength}`, bytes);
    expect(response.headers.range).toBe(`0-${bytes.byteLength}`);
    expect((await t.server.getTrace(build.id)).equals(bytes)).toBe(true);
  });
});
