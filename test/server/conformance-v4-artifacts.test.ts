/** docs/protocol-v4.md §7 (V10 upload with artifact_type/format/expire_in, V11 download with a job token) over raw HTTP. */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { registerV4, takeJob, updateJob, v4 } from './v4-http.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer({ maxArtifactsSize: 64 * 1024 });
  token = (await registerV4(t)).token;
});
afterAll(async () => {
  await t.close();
});

const BOUNDARY = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';

/** A chunked multipart body, as GitLab Runner's uploader streams it (part `file`, fields first). */
async function* multipart(file: Buffer, filename: string, fields: Record<string, string> = {}): AsyncIterable<Uint8Array> {
  for (const [name, value] of Object.entries(fields)) yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  for (let at = 0; at < file.byteLength; at += 4096) yield file.subarray(at, at + 4096);
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}

function upload(job: { id: number; token?: string }, file: Buffer, query: string, options: { filename?: string; fields?: Record<string, string> } = {}) {
  return v4(t.url, 'POST', `/jobs/${job.id}/artifacts${query}`, {
    body: multipart(file, options.filename ?? 'artifacts.zip', options.fields),
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...(job.token ? { 'job-token': job.token } : {}) },
  });
}

function download(id: number, jobToken?: string) {
  return v4(t.url, 'GET', `/jobs/${id}/artifacts?direct_download=true`, { headers: jobToken ? { 'job-token': jobToken } : {} });
}

const TWO_STAGES = 'stages: [b, t]\nbuild:\n  stage: b\n  script: [x]\n  artifacts:\n    paths: [out/]\n    reports:\n      dotenv: build.env\ntest:\n  stage: t\n  script: [x]\n';

describe('V10 upload', () => {
  it('stores an archive (201), which the next stage lists and downloads with its own token', async () => {
    await t.pipeline(TWO_STAGES);
    const build = await takeJob(t, token);
    const zip = randomBytes(3000);
    const response = await upload(build, zip, '?artifact_format=zip&artifact_type=archive&expire_in=1+day');
    expect(response.status).toBe(201);
    expect(t.server.getJob(build.id)?.artifacts).toMatchObject({ filename: 'artifacts.zip', size: 3000 });
    expect(Date.parse(t.server.getJob(build.id)!.artifacts!.expire_at!)).toBeGreaterThan(Date.now() + 23 * 3600 * 1000);
    const report = await upload(build, gzipSync('VERSION=1.2.3\n# a comment\nQUOTED="two words"\n'), '?artifact_format=gzip&artifact_type=dotenv&expire_in=1+day', { filename: 'dotenv.env.gz' });
    expect(report.status).toBe(201);
    expect(t.server.getJob(build.id)?.dotenv_variables).toEqual(['VERSION', 'QUOTED']);
    expect((await updateJob(t, build, { state: 'success' })).status).toBe(200);

    const test = await takeJob(t, token);
    expect(test.dependencies).toEqual([{ id: build.id, name: 'build', token: test.token, artifacts_file: { filename: 'artifacts.zip', size: 3000 } }]);
    expect(test.variables.filter((v) => ['VERSION', 'QUOTED'].includes(v.key))).toEqual([
      { key: 'VERSION', value: '1.2.3', public: true, masked: false },
      { key: 'QUOTED', value: 'two words', public: true, masked: false },
    ]);
    const file = await download(build.id, test.token);
    expect(file.status).toBe(200);
    expect(file.body.equals(zip)).toBe(true);
    // The dependency's own token is dead once it finished (GitLab ≥ 15 sends the downloading job's).
    expect((await download(build.id, build.token)).status).toBe(401);
  });

  it('takes the token from a form field sent before the file, and refuses a wrong one before storing anything', async () => {
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, token);
    expect((await upload({ id: job.id }, randomBytes(100), '', { fields: { token: 'wrong' } })).status).toBe(403);
    expect(t.server.getJob(job.id)?.artifacts).toBeNull();
    expect((await upload({ id: job.id }, randomBytes(100), '', { fields: { token: job.token } })).status).toBe(201);
  });

  it('answers 413 at the size limit, 400 for a bad expire_in, type or format, and 403 once the job is done', async () => {
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, token);
    expect((await upload(job, randomBytes(64 * 1024), '')).status).toBe(413);
    expect((await upload(job, randomBytes(10), '?expire_in=whenever')).status).toBe(400);
    expect((await upload(job, randomBytes(10), '?artifact_type=junit')).status).toBe(400);
    expect((await upload(job, randomBytes(10), '?artifact_format=rar')).status).toBe(400);
    expect(t.server.getJob(job.id)?.artifacts).toBeNull();
    await updateJob(t, job, { state: 'success' });
    const late = await upload(job, randomBytes(10), '');
    expect(late.status).toBe(403);
    expect(late.headers['job-status']).toBe('success');
  });

  it('refuses a dotenv report with a bad line or over 5 KiB (400 saying why), keeping no variables', async () => {
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, token);
    const bad = await upload(job, gzipSync('OK=1\nnot a pair\n'), '?artifact_type=dotenv&artifact_format=gzip');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/line 2/);
    const big = await upload(job, gzipSync(`A=${'x'.repeat(6000)}\n`), '?artifact_type=dotenv&artifact_format=gzip');
    expect(big.status).toBe(400);
    expect(big.text).toMatch(/5120 bytes/);
    expect(t.server.getJob(job.id)?.dotenv_variables).toBeUndefined();
    expect((await upload(job, Buffer.from('RAW=yes\n'), '?artifact_type=dotenv&artifact_format=raw')).status).toBe(201);
    expect(t.server.getJob(job.id)?.dotenv_variables).toEqual(['RAW']);
  });

  it('keeps a name beyond ASCII (RFC 5987 filename* or UTF-8) and serves it as filename*, where a header cannot carry it', async () => {
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, token);
    const body = Buffer.concat([
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''%E2%9C%93%20r%C3%A9sum%C3%A9.zip\r\nContent-Type: application/octet-stream\r\n\r\n`),
      randomBytes(10),
      Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
    ]);
    const stored = await v4(t.url, 'POST', `/jobs/${job.id}/artifacts`, { body, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'job-token': job.token } });
    expect(stored.status).toBe(201);
    expect(t.server.getJob(job.id)?.artifacts?.filename).toBe('✓ résumé.zip');
    const served = await download(job.id, job.token);
    expect(served.status).toBe(200);
    expect(served.headers['content-disposition']).toBe(`attachment; filename="_ r_sum_.zip"; filename*=UTF-8''%E2%9C%93%20r%C3%A9sum%C3%A9.zip`);
    await updateJob(t, job, { state: 'success' });
  });

  it('refuses Workhorse\'s authorize call', async () => {
    expect((await v4(t.url, 'POST', '/jobs/1/artifacts/authorize', { headers: { 'job-token': 'x' } })).status).toBe(403);
  });
});

describe('V11 download', () => {
  it('answers 401 without a running job\'s token, 403 for no job, 404 for no artifacts (scope: v4-artifacts-scope.test.ts)', async () => {
    await t.pipeline('a:\n  script: [x]\nb:\n  script: [x]\n');
    const a = await takeJob(t, token);
    const b = await takeJob(t, token);
    await upload(a, randomBytes(10), '');
    await updateJob(t, a, { state: 'success' });
    expect((await download(a.id)).status).toBe(401);
    expect((await download(a.id, a.token)).status).toBe(401);
    expect((await download(a.id, b.token)).status).toBe(200);
    expect((await download(b.id, b.token)).status).toBe(404);
    expect((await download(999_999, b.token)).status).toBe(403);
    await updateJob(t, b, { state: 'success' });
  });
});
