/**
 * Issue 34 item 9: the data dir holds the admin token, registration and runner tokens, masked
 * variables, traces and artifacts: it is 0700 and every file in it 0600, whatever the umask, for
 * files created later (traces, artifacts, uploads, the journal rewritten at start) as for the first.
 */
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createGitRepo } from '../helpers/git.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';
import { ADMIN_TOKEN, REGISTRATION_TOKEN, startServe, type ServeProcess } from './serve-process.js';

const cleanup: string[] = [];
afterEach(async () => {
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function scratch(): Promise<{ repo: string; root: string; dataDir: string }> {
  const repo = await createGitRepo({ 'README.md': 'hi\n' });
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-modes-'));
  cleanup.push(repo, root);
  return { repo, root, dataDir: join(root, 'data') };
}

/** Every path under `dir` (itself included) whose mode is not 0700 (directories) or 0600 (files). */
async function looseModes(dir: string): Promise<string[]> {
  const loose: string[] = [];
  const visit = async (path: string): Promise<void> => {
    const stats = await lstat(path);
    const mode = stats.mode & 0o777;
    if (stats.isDirectory()) {
      if (mode !== 0o700) loose.push(`${path} ${mode.toString(8)}`);
      for (const name of await readdir(path)) await visit(join(path, name));
    } else if (mode !== 0o600) {
      loose.push(`${path} ${mode.toString(8)}`);
    }
  };
  await visit(dir);
  return loose;
}

/** How many entries (files and dirs) are under `dir`. */
async function countEntries(dir: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) if (entry.isFile() || entry.isDirectory()) count += 1;
  return count;
}

const admin = { headers: { 'private-token': ADMIN_TOKEN } };
const PIPELINE = 'version:\n  script: [x]\n  artifacts:\n    paths: [other.txt]\n    reports:\n      dotenv: build.env\n';

/** A tar.gz holding a dotenv report and another file: the server rewrites it without the report. */
async function archiveWithReport(root: string): Promise<Buffer> {
  const files = join(root, 'archive-src');
  await mkdir(files, { recursive: true });
  await writeFile(join(files, 'build.env'), 'VERSION=1\n');
  await writeFile(join(files, 'other.txt'), 'kept\n');
  const chunks: Buffer[] = [];
  for await (const chunk of tar.c({ gzip: true, cwd: files }, ['build.env', 'other.txt'])) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

function multipart(file: Buffer): { body: Buffer; headers: Record<string, string> } {
  const boundary = 'b0undary1234';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="artifacts.tar.gz"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Registers a runner, runs a job that sends a trace and artifacts with a dotenv report: every kind of file the data dir holds. */
async function exercise(server: ServeProcess, root: string): Promise<void> {
  const registered = await api(server.url, 'POST', '/runners/register.json', { json: { token: REGISTRATION_TOKEN, info: LEGACY_INFO } });
  expect(registered.status).toBe(201);
  const runner = JSON.parse(registered.text) as { token: string };
  expect((await raw(server.url, 'POST', '/admin/api/pipelines', { ...admin, json: { project: 'acme/app', config: PIPELINE, variables: { SECRET: 's3cret-value' } } })).status).toBe(201);
  const taken = await api(server.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runner.token } });
  expect(taken.status).toBe(201);
  const build = JSON.parse(taken.text) as BuildPayload;
  const part = 'some output\n';
  expect((await api(server.url, 'PATCH', `/builds/${build.id}/trace.txt`, { body: part, headers: { 'build-token': build.token, 'content-range': `0-${part.length}` } })).status).toBe(202);
  const upload = multipart(await archiveWithReport(root));
  expect((await api(server.url, 'POST', `/builds/${build.id}/artifacts`, { body: upload.body, headers: { ...upload.headers, 'build-token': build.token } })).status).toBe(201);
  expect((await api(server.url, 'PUT', `/builds/${build.id}.json`, { json: { token: runner.token, state: 'success', trace: 'the whole trace\n' } })).status).toBe(200);
  const job = JSON.parse((await raw(server.url, 'GET', `/admin/api/jobs/${build.id}`, admin)).text) as { dotenv_variables?: string[]; artifacts: unknown };
  expect(job.dotenv_variables).toEqual(['VERSION']); // the archive was rewritten without the report
  expect(job.artifacts).not.toBeNull();
}

async function stop(server: ServeProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.child;
}

describe('serve --data-dir file modes', () => {
  for (const umask of ['022', '000']) {
    it(`creates the data dir 0700 and every file in it 0600 under umask ${umask}, the journal rewritten at the next start included`, async () => {
      const { repo, root, dataDir } = await scratch();
      const flags = ['--data-dir', dataDir, '--project', `acme/app=${repo}`, '--log-level', 'warn'];
      const first = await startServe(flags, { umask });
      try {
        await exercise(first, root);
        expect(await looseModes(dataDir)).toEqual([]);
      } finally {
        await stop(first);
      }
      // The next start folds the journal into a new snapshot and journal; they are written afresh.
      const second = await startServe(flags, { umask });
      try {
        await exercise(second, root);
        expect(await looseModes(dataDir)).toEqual([]);
        expect(await countEntries(dataDir)).toBeGreaterThan(6);
      } finally {
        await stop(second);
      }
    }, 120_000);
  }

  it('tightens a data dir an earlier version left readable by others, with a warning', async () => {
    const { repo, root, dataDir } = await scratch();
    const flags = ['--data-dir', dataDir, '--project', `acme/app=${repo}`, '--log-level', 'warn'];
    const first = await startServe(flags);
    try {
      await exercise(first, root);
    } finally {
      await stop(first);
    }
    // What an earlier version left: a 0755 dir of 0644 files.
    for (const entry of await readdir(dataDir, { withFileTypes: true, recursive: true })) {
      await chmod(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
    }
    await chmod(dataDir, 0o755);
    expect((await looseModes(dataDir)).length).toBeGreaterThan(5);
    const second = await startServe(flags);
    try {
      expect(await looseModes(dataDir)).toEqual([]);
      expect(second.output()).toMatch(/data dir .* was open to other users .*made it private/);
    } finally {
      await stop(second);
    }
  }, 120_000);
});
