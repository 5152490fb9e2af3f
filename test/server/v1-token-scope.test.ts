/**
 * Over API v1 a build's token reaches every later job of its pipeline (`depends_on_builds[].token`,
 * docs/protocol-v1.md §5.5), for downloading its artifacts. Once the build has finished, that is all the
 * token does: it appends nothing to the finished build's trace (a canceled build still takes the parts
 * its runner had in flight) and deletes no artifacts. And a trace stops at a limit over either API
 * (GitLab's 100 MiB over v4, 1 GiB over v1): a token cannot make the server store a log without bound.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createReferenceServer } from '../../src/server/index.js';
import { MAX_TRACE_BYTES, MAX_TRACE_BYTES_V1 } from '../../src/server/state/traces.js';
import { createGitRepo } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';
import { patchTrace, r14Info, takeJob, v4 } from './v4-http.js';

let t: TestServer;
let runnerToken: string;
beforeAll(async () => {
  t = await startTestServer();
  runnerToken = (await t.registerRunner()).token;
});
afterAll(async () => {
  await t.close();
});

async function take(url: string, token: string): Promise<BuildPayload> {
  const response = await api(url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

function patch(url: string, build: { id: number; token: string }, start: number, text: string) {
  return api(url, 'PATCH', `/builds/${build.id}/trace.txt`, { body: text, headers: { 'build-token': build.token, 'content-range': `${start}-${start + Buffer.byteLength(text)}` } });
}

const BOUNDARY = 'a1b2c3d4e5f6';
function upload(build: { id: number; token: string }) {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="artifacts.zip"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    randomBytes(100),
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return api(t.url, 'POST', `/builds/${build.id}/artifacts`, { body, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': build.token } });
}

describe('a finished build\'s token (API v1)', () => {
  it('downloads the build\'s artifacts for a later job, and appends to its trace or deletes its artifacts no more', async () => {
    await t.pipeline('stages: [b, t]\nbuild:\n  stage: b\n  script: [x]\ntest:\n  stage: t\n  script: [x]\n');
    const first = await take(t.url, runnerToken);
    expect((await patch(t.url, first, 0, 'the log\n')).status).toBe(202);
    expect((await upload(first)).status).toBe(201);
    expect((await api(t.url, 'PUT', `/builds/${first.id}.json`, { json: { token: runnerToken, state: 'success' } })).status).toBe(200);
    const later = await take(t.url, runnerToken);
    const handed = later.depends_on_builds.find((dep) => dep.id === first.id)!;
    expect(handed.token).toBe(first.token);

    expect((await api(t.url, 'GET', `/builds/${first.id}/artifacts`, { headers: { 'build-token': handed.token } })).status).toBe(200);
    const appended = await patch(t.url, handed, 8, 'forged line\n');
    expect(appended.status).toBe(403);
    expect((await t.server.getTrace(first.id)).toString()).toBe('the log\n');
    expect((await api(t.url, 'DELETE', `/builds/${first.id}/artifacts`, { headers: { 'build-token': handed.token } })).status).toBe(403);
    expect(t.server.getJob(first.id)?.artifacts).not.toBeNull();
    expect((await api(t.url, 'PUT', `/builds/${later.id}.json`, { json: { token: runnerToken, state: 'success' } })).status).toBe(200);
  });

  it('still takes the parts a canceled build\'s runner had in flight, telling it Build-Status: canceled', async () => {
    await t.pipeline('c:\n  script: [x]\n');
    const build = await take(t.url, runnerToken);
    t.server.cancelJob(build.id);
    const response = await patch(t.url, build, 0, 'in flight\n');
    expect(response.status).toBe(202);
    expect(response.headers['build-status']).toBe('canceled');
  });
});

describe('the trace size limit', () => {
  it('fails a running build whose trace would pass its limit (403, trace_size_exceeded), over API v1 and v4', async () => {
    const repo = await createGitRepo({ 'README.md': 'hi\n' });
    const dataDir = await mkdtemp(join(tmpdir(), 'ci-runner-trace-cap-'));
    const options = { dataDir, projects: [{ name: 'acme/app', path: repo }] };
    try {
      const before = await createReferenceServer(options);
      await before.createPipeline({ project: 'acme/app', config: 'a:\n  script: [x]\nb:\n  script: [x]\n' });
      const legacy = await take(before.url, (await registerWith(before.url, before.registrationToken)).token);
      const registered = await v4(before.url, 'POST', '/runners', { json: { token: before.registrationToken, info: r14Info() } });
      const modern = await takeJob({ url: before.url }, (JSON.parse(registered.text) as { token: string }).token);
      await before.close();
      // A trace already at the limit, without writing 100 MiB: a sparse file the next start reads the size of.
      await mkdir(join(dataDir, 'traces'), { recursive: true });
      for (const [id, limit] of [[legacy.id, MAX_TRACE_BYTES_V1], [modern.id, MAX_TRACE_BYTES]] as const) {
        await writeFile(join(dataDir, 'traces', `${id}.log`), '');
        await truncate(join(dataDir, 'traces', `${id}.log`), limit);
      }
      const after = await createReferenceServer(options);
      try {
        const v1 = await patch(after.url, legacy, MAX_TRACE_BYTES_V1, 'one byte too many');
        expect(v1.status).toBe(403);
        expect(after.getJob(legacy.id)).toMatchObject({ status: 'failed', failure_reason: 'trace_size_exceeded' });
        const v4 = await patchTrace({ url: after.url }, modern, MAX_TRACE_BYTES, 'one byte too many');
        expect(v4.status).toBe(403);
        expect(after.getJob(modern.id)).toMatchObject({ status: 'failed', failure_reason: 'trace_size_exceeded' });
      } finally {
        await after.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await rm(repo, { recursive: true, force: true });
    }
  });
});

async function registerWith(url: string, registrationToken: string): Promise<{ token: string }> {
  const response = await api(url, 'POST', '/runners/register.json', { json: { token: registrationToken, info: LEGACY_INFO } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as { token: string };
}
