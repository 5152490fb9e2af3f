/** docs/protocol-v1.md §4.7–§4.9 (E7 upload, E8 download, E9 delete), §8.4, over raw HTTP. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';

let t: TestServer;
let runnerToken: string;
let workDir: string;
let zip: Buffer;
beforeAll(async () => {
  t = await startTestServer({ maxArtifactsSize: 64 * 1024 });
  runnerToken = (await t.registerRunner()).token;
  workDir = await mkdtemp(join(tmpdir(), 'ci-runner-artifacts-test-'));
  await writeFile(join(workDir, 'out.txt'), 'built output\n');
  await execa('zip', ['-q', 'artifacts.zip', 'out.txt'], { cwd: workDir });
  zip = await readFile(join(workDir, 'artifacts.zip'));
});
afterAll(async () => {
  await t.close();
  await rm(workDir, { recursive: true, force: true });
});

async function newBuild(): Promise<BuildPayload> {
  await t.pipeline('test:\n  script:\n    - echo hello\n');
  const response = await api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runnerToken } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

const BOUNDARY = '5f1a0b9c2d3e4f5a6b7c8d9e0f1a2b3c';

/** A streamed (chunked, no Content-Length) multipart body, as the legacy uploader sends it. */
async function* chunkedMultipart(file: Buffer, filename = 'artifacts.zip', fields: Record<string, string> = {}): AsyncIterable<Uint8Array> {
  for (const [name, value] of Object.entries(fields)) {
    yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  }
  yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  for (let at = 0; at < file.byteLength; at += 1000) {
    yield file.subarray(at, at + 1000);
    await new Promise((resolve) => setImmediate(resolve));
  }
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}

function upload(build: { id: number; token: string }, file: Buffer, query = '?', fields: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return api(t.url, 'POST', `/builds/${build.id}/artifacts${query}`, {
    body: chunkedMultipart(file, 'artifacts.zip', fields),
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': build.token, ...headers },
  });
}

describe('E7 upload artifacts', () => {
  it('stores a chunked multipart ZIP and answers 201 with the build JSON and artifacts_file', async () => {
    const build = await newBuild();
    const response = await upload(build, zip, '?expire_in=1+week');
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.text) as BuildPayload;
    expect(body.id).toBe(build.id);
    expect(body.artifacts_file).toEqual({ filename: 'artifacts.zip', size: zip.byteLength });
    const expires = Date.parse(body.artifacts_expire_at ?? '');
    expect(expires - Date.now()).toBeGreaterThan(6 * 86_400_000);
    expect(expires - Date.now()).toBeLessThan(8 * 86_400_000);
  });

  it('takes expire_in from a form field and answers 400 for a value that is not a duration', async () => {
    const build = await newBuild();
    const ok = await upload(build, zip, '', { expire_in: '2h20min' });
    expect(ok.status).toBe(201);
    const expires = Date.parse((JSON.parse(ok.text) as BuildPayload).artifacts_expire_at ?? '');
    expect(Math.abs(expires - Date.now() - 140 * 60_000)).toBeLessThan(60_000);
    expect((await upload(build, zip, '?expire_in=soonish')).status).toBe(400);
  });

  it('stores no expiry when expire_in is absent (a bare ?)', async () => {
    const build = await newBuild();
    const response = await upload(build, zip, '?');
    expect(JSON.parse(response.text)).not.toHaveProperty('artifacts_expire_at');
    expect(t.server.getJob(build.id)?.artifacts).toEqual({ filename: 'artifacts.zip', size: zip.byteLength, expire_at: null });
  });

  it('answers 413 when the file reaches the size limit, and 201 just below it', async () => {
    const build = await newBuild();
    expect((await upload(build, randomBytes(64 * 1024))).status).toBe(413);
    expect((await upload(build, randomBytes(200 * 1024))).status).toBe(413);
    expect(t.server.getJob(build.id)?.artifacts).toBeNull();
    expect((await upload(build, randomBytes(64 * 1024 - 1))).status).toBe(201);
  });

  it('answers 403 when the build is not running, 403 for a wrong token, 404 for an unknown build', async () => {
    const build = await newBuild();
    expect((await upload({ id: build.id, token: 'wrong' }, zip)).status).toBe(403);
    expect((await upload({ id: 999999, token: build.token }, zip)).status).toBe(404);
    t.server.cancelJob(build.id);
    const response = await upload(build, zip);
    expect(response.status).toBe(403);
    expect(JSON.parse(response.text)).toEqual({ message: '403 Forbidden  - Build is not running!' });
  });

  it('answers 400 when there is no file part or the multipart body is malformed', async () => {
    const build = await newBuild();
    const noFile = await api(t.url, 'POST', `/builds/${build.id}/artifacts`, {
      body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="other"\r\n\r\nx\r\n--${BOUNDARY}--\r\n`,
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': build.token },
    });
    expect(noFile.status).toBe(400);
    const broken = await api(t.url, 'POST', `/builds/${build.id}/artifacts`, {
      body: 'this is not multipart',
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': build.token },
    });
    expect(broken.status).toBe(400);
    const noBoundary = await api(t.url, 'POST', `/builds/${build.id}/artifacts`, {
      body: 'x',
      headers: { 'content-type': 'multipart/form-data', 'build-token': build.token },
    });
    expect(noBoundary.status).toBe(400);
  });

  it('accepts the build token as a form field before the file (curl --form style)', async () => {
    const build = await newBuild();
    const response = await api(t.url, 'POST', `/builds/${build.id}/artifacts`, {
      body: chunkedMultipart(zip, 'artifacts.zip', { token: build.token }),
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    });
    expect(response.status).toBe(201);
  });
});

describe('E8 download artifacts', () => {
  it('streams the stored bytes with Content-Disposition', async () => {
    const build = await newBuild();
    await upload(build, zip);
    const response = await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': build.token } });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.headers['content-disposition']).toBe('attachment; filename=artifacts.zip');
    expect(response.body.equals(zip)).toBe(true);
  });

  it('answers 404 when absent, 403 for a wrong token, 404 for an unknown build', async () => {
    const build = await newBuild();
    expect((await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': build.token } })).status).toBe(404);
    await upload(build, zip);
    expect((await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': 'nope' } })).status).toBe(403);
    expect((await api(t.url, 'GET', '/builds/999999/artifacts', { headers: { 'build-token': build.token } })).status).toBe(404);
  });

  it('answers 404 once the artifacts have expired', async () => {
    const build = await newBuild();
    const uploaded = await upload(build, zip, '?expire_in=1+sec');
    expect(uploaded.status).toBe(201);
    expect((JSON.parse(uploaded.body.toString()) as BuildPayload).artifacts_expire_at).toEqual(expect.any(String));
    // Asked until the expiry passes: served before it, 404 from then on, never the other way round.
    const statuses: number[] = [];
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const { status } = await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': build.token } });
      statuses.push(status);
      if (status === 404) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(statuses.at(-1)).toBe(404);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
  });

  it('serves a finished build (it need not be running)', async () => {
    const build = await newBuild();
    await upload(build, zip);
    await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token: runnerToken, state: 'success' } });
    expect((await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': build.token } })).status).toBe(200);
  });
});

describe('E9 delete artifacts', () => {
  it('removes the file: 200, then E8 answers 404', async () => {
    const build = await newBuild();
    await upload(build, zip);
    expect((await api(t.url, 'DELETE', `/builds/${build.id}/artifacts`, { headers: { 'build-token': 'bad' } })).status).toBe(403);
    expect((await api(t.url, 'DELETE', '/builds/999999/artifacts', { headers: { 'build-token': build.token } })).status).toBe(404);
    expect((await api(t.url, 'DELETE', `/builds/${build.id}/artifacts`, { json: { token: build.token } })).status).toBe(200);
    expect((await api(t.url, 'GET', `/builds/${build.id}/artifacts`, { headers: { 'build-token': build.token } })).status).toBe(404);
    expect(t.server.getJob(build.id)?.artifacts).toBeNull();
  });
});
