/**
 * Issue 34 item 6: whose artifacts a job token downloads (`GET /api/v4/jobs/:id/artifacts`). As GitLab:
 * the token must be a running job's (401 otherwise); that job may read the jobs of its own project —
 * its dependencies, which its payload hands it its own token for, and the rest of the project — and no
 * other project's, which only a job token allowlist could open and this server keeps none (403).
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitRepo } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { registerV4, takeJob, updateJob, v4 } from './v4-http.js';

let t: TestServer;
let token: string;
let otherRepo: string;
beforeAll(async () => {
  otherRepo = await createGitRepo({ 'README.md': 'project Q\n' });
  t = await startTestServer({ projects: [{ name: 'other/q', path: otherRepo }] });
  token = (await registerV4(t)).token;
});
afterAll(async () => {
  await t.close();
  await rm(otherRepo, { recursive: true, force: true });
});

const BOUNDARY = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';

function upload(job: { id: number; token: string }, file: Buffer) {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="artifacts.zip"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return v4(t.url, 'POST', `/jobs/${job.id}/artifacts`, { body, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'job-token': job.token } });
}

function download(id: number, jobToken?: string) {
  return v4(t.url, 'GET', `/jobs/${id}/artifacts`, { headers: jobToken ? { 'job-token': jobToken } : {} });
}

const TWO_STAGES = 'stages: [b, t]\nbuild:\n  stage: b\n  script: [x]\n  artifacts:\n    paths: [out/]\ntest:\n  stage: t\n  script: [x]\n';

describe('V11 download scope', () => {
  it("refuses a running job of another project (403), serves the job's dependencies and its own project (200)", async () => {
    // Job A of project P, with artifacts.
    await t.pipeline(TWO_STAGES);
    const a = await takeJob(t, token);
    // Job B of project Q, running.
    await t.server.createPipeline({ project: 'other/q', config: 'b:\n  script: [x]\n' });
    const b = await takeJob(t, token);
    expect(b.job_info.project_full_path).toBe('other/q');
    const archive = randomBytes(2000);
    expect((await upload(a, archive)).status).toBe(201);
    expect((await updateJob(t, a, { state: 'success' })).status).toBe(200);

    const refused = await download(a.id, b.token);
    expect(refused.status).toBe(403);
    expect(refused.body.equals(archive)).toBe(false);
    // The same through the `token` parameter.
    expect((await v4(t.url, 'GET', `/jobs/${a.id}/artifacts?token=${b.token}`)).status).toBe(403);

    // A's dependent job in P downloads with the token its payload names.
    const c = await takeJob(t, token);
    expect(c.dependencies).toEqual([{ id: a.id, name: 'build', token: c.token, artifacts_file: { filename: 'artifacts.zip', size: 2000 } }]);
    const served = await download(a.id, c.dependencies[0]!.token);
    expect(served.status).toBe(200);
    expect(served.body.equals(archive)).toBe(true);
    // Another running job of P, in another pipeline, reads A's too (the project's own jobs, as GitLab).
    await t.pipeline('other:\n  script: [x]\n');
    const d = await takeJob(t, token);
    expect((await download(a.id, d.token)).status).toBe(200);
    for (const job of [b, c, d]) await updateJob(t, job, { state: 'success' });
  });

  it("answers 401 without a token or with a token of no running job (A's own, once A is done), 403 for no such job, 404 for no artifacts", async () => {
    await t.pipeline('a:\n  script: [x]\nb:\n  script: [x]\n');
    const a = await takeJob(t, token);
    const b = await takeJob(t, token);
    expect((await upload(a, randomBytes(10))).status).toBe(201);
    expect((await download(a.id, a.token)).status).toBe(200); // its own, while it runs
    await updateJob(t, a, { state: 'success' });
    expect((await download(a.id)).status).toBe(401);
    expect((await download(a.id, 'not-a-job-token')).status).toBe(401);
    expect((await download(a.id, a.token)).status).toBe(401);
    expect((await download(999_999, b.token)).status).toBe(403);
    expect((await download(b.id, b.token)).status).toBe(404);
    await updateJob(t, b, { state: 'success' });
    expect((await download(a.id, b.token)).status).toBe(401);
  });
});
