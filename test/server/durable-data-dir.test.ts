/**
 * Issue 13 item 9: `serve --data-dir` keeps runners, pipelines, builds, traces and artifacts across a
 * SIGKILL, never reuses an id, and loads a journal whose last write was torn.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createReferenceServer } from '../../src/server/index.js';
import { createGitRepo } from '../helpers/git.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';
import { ADMIN_TOKEN, REGISTRATION_TOKEN, startServe } from './serve-process.js';

const cleanup: string[] = [];
afterEach(async () => {
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function scratch(): Promise<{ repo: string; dataDir: string }> {
  const repo = await createGitRepo({ 'README.md': 'hi\n' });
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-durable-'));
  cleanup.push(repo, root);
  return { repo, dataDir: join(root, 'data') };
}

const admin = { headers: { 'private-token': ADMIN_TOKEN } };
const PIPELINE = 'stages: [build, test]\nfirst:\n  stage: build\n  script: [a]\nsecond:\n  stage: build\n  script: [b]\nthird:\n  stage: test\n  script: [c]\n';

async function register(url: string): Promise<{ id: number; token: string }> {
  const response = await api(url, 'POST', '/runners/register.json', { json: { token: REGISTRATION_TOKEN, info: LEGACY_INFO } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as { id: number; token: string };
}

async function take(url: string, token: string): Promise<BuildPayload> {
  const response = await api(url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

async function job(url: string, id: number): Promise<Record<string, unknown>> {
  return JSON.parse((await raw(url, 'GET', `/admin/api/jobs/${id}`, admin)).text) as Record<string, unknown>;
}

function multipart(file: Buffer): { body: Buffer; headers: Record<string, string> } {
  const boundary = 'b0undary1234';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="artifacts.zip"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describe('serve --data-dir', () => {
  it('keeps runners, pipelines, builds, traces and artifacts across a SIGKILL, and never reuses an id', async () => {
    const { repo, dataDir } = await scratch();
    const flags = ['--data-dir', dataDir, '--project', `acme/app=${repo}`, '--log-level', 'warn'];
    const first = await startServe(flags);
    const runner = await register(first.url);
    const gone = await register(first.url);
    expect((await api(first.url, 'DELETE', '/runners/delete', { json: { token: gone.token } })).status).toBe(200);
    expect((await raw(first.url, 'POST', '/admin/api/pipelines', { ...admin, json: { project: 'acme/app', config: PIPELINE } })).status).toBe(201);
    const done = await take(first.url, runner.token);
    const running = await take(first.url, runner.token);
    const patch = (url: string, build: BuildPayload, start: number, text: string) =>
      api(url, 'PATCH', `/builds/${build.id}/trace.txt`, { body: text, headers: { 'build-token': build.token, 'content-range': `${start}-${start + text.length}` } });
    expect((await patch(first.url, done, 0, 'finished job output\n')).status).toBe(202);
    const archive = randomBytes(3000);
    const upload = multipart(archive);
    expect((await api(first.url, 'POST', `/builds/${done.id}/artifacts`, { body: upload.body, headers: { ...upload.headers, 'build-token': done.token } })).status).toBe(201);
    expect((await api(first.url, 'PUT', `/builds/${done.id}.json`, { json: { token: runner.token, state: 'success' } })).status).toBe(200);
    expect((await patch(first.url, running, 0, 'half of the output\n')).status).toBe(202);

    first.child.kill('SIGKILL');
    await first.child;
    await mkdir(join(dataDir, 'tmp'), { recursive: true });
    await writeFile(join(dataDir, 'tmp', 'upload-cut-by-the-kill'), 'half an archive');
    const second = await startServe(flags);
    try {
      expect(await readdir(join(dataDir, 'tmp')).catch(() => [])).toEqual([]);
      // The finished build, its trace and its artifacts.
      expect(await job(second.url, done.id)).toMatchObject({ status: 'success', trace_size: 20, artifacts: { filename: 'artifacts.zip', size: 3000 } });
      expect((await raw(second.url, 'GET', `/admin/api/jobs/${done.id}/trace`, admin)).text).toBe('finished job output\n');
      const download = await api(second.url, 'GET', `/builds/${done.id}/artifacts`, { headers: { 'build-token': done.token } });
      expect(download.status).toBe(200);
      expect(download.body.equals(archive)).toBe(true);
      // The running build is still running; its runner goes on where it was, with the same tokens.
      expect(await job(second.url, running.id)).toMatchObject({ status: 'running', runner_id: runner.id, trace_size: 19 });
      const resumed = await patch(second.url, running, 19, 'and the rest\n');
      expect(resumed.status).toBe(202);
      expect(resumed.headers.range).toBe('0-32');
      expect((await api(second.url, 'PUT', `/builds/${running.id}.json`, { json: { token: runner.token, state: 'success' } })).status).toBe(200);
      // The pipeline moves on to its next stage, and the deleted runner stays deleted.
      const third = await take(second.url, runner.token);
      expect(third.name).toBe('third');
      expect((await api(second.url, 'PUT', '/builds/-1', { json: { token: gone.token } })).status).toBe(403);
      // New ids follow the old ones, deleted runner included.
      expect((await register(second.url)).id).toBe(gone.id + 1);
      const pipeline = JSON.parse((await raw(second.url, 'POST', '/admin/api/pipelines', { ...admin, json: { project: 'acme/app', config: PIPELINE } })).text) as { id: number; jobs: Array<{ id: number }> };
      expect(pipeline.id).toBe(2);
      expect(pipeline.jobs.map((j) => j.id)).toEqual([4, 5, 6]);
      expect(await job(second.url, 4)).toMatchObject({ trace_size: 0 });
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
  }, 120_000);

  it('loads a journal whose last record was cut mid-write, keeping every whole record before it', async () => {
    const { repo, dataDir } = await scratch();
    const options = { dataDir, registrationToken: REGISTRATION_TOKEN, adminToken: ADMIN_TOKEN, projects: [{ name: 'acme/app', path: repo }] };
    const before = await createReferenceServer(options);
    const runner = await register(before.url);
    await before.createPipeline({ project: 'acme/app', config: 'only:\n  script: [x]\n' });
    const last = await register(before.url); // the record that will be torn
    await before.close();
    const journal = (await readdir(dataDir)).find((name) => /^journal-\d+\.log$/.test(name));
    expect(journal).toBeDefined();
    const path = join(dataDir, journal!);
    await truncate(path, (await stat(path)).size - 7);

    const after = await createReferenceServer(options);
    try {
      expect(after.getJob(1)).toMatchObject({ name: 'only', status: 'pending' });
      expect((await api(after.url, 'PUT', '/builds/-1', { json: { token: runner.token } })).status).toBe(404); // known runner
      expect((await api(after.url, 'PUT', '/builds/-1', { json: { token: last.token } })).status).toBe(403); // lost with the torn record
      expect((await readdir(dataDir)).some((name) => name.includes('.dropped-'))).toBe(true); // the torn bytes are kept aside
      // A record that never reached the disk was never acknowledged, so its id may be handed out again.
      expect((await register(after.url)).id).toBe(last.id);
    } finally {
      await after.close();
    }
    // The cut journal was folded into a clean snapshot: a third start sees the same state.
    const again = await createReferenceServer(options);
    expect(again.getJob(1)).toMatchObject({ name: 'only' });
    await again.close();
  });

  it('starts build ids after the trace files of a data dir that holds no state yet', async () => {
    const { repo, dataDir } = await scratch();
    await mkdir(join(dataDir, 'traces'), { recursive: true });
    await writeFile(join(dataDir, 'traces', '7.log'), 'a trace from an earlier run\n');
    const server = await createReferenceServer({ dataDir, projects: [{ name: 'acme/app', path: repo }] });
    try {
      const pipeline = await server.createPipeline({ project: 'acme/app', config: 'only:\n  script: [x]\n' });
      expect(pipeline.jobs[0]?.id).toBe(8);
      expect((await server.getTrace(8)).byteLength).toBe(0);
    } finally {
      await server.close();
    }
    expect(await readFile(join(dataDir, 'traces', '7.log'), 'utf8')).toBe('a trace from an earlier run\n');
  });

  it('refuses a data dir another live server is using', async () => {
    const { dataDir } = await scratch();
    const server = await createReferenceServer({ dataDir });
    try {
      await expect(createReferenceServer({ dataDir })).rejects.toMatchObject({ code: 'DATA_DIR_IN_USE' });
    } finally {
      await server.close();
    }
  });
});
