/**
 * Over API v1 a dotenv report travels inside the artifacts archive and the server rewrites the archive
 * without it (state/dotenv-report.ts). The report's path comes from the pipeline file (which a job can
 * write itself, as a child pipeline's), and the archive from the job: neither may make the server
 * touch a file outside its work dir, nor inflate an archive without bound on the server's disk.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';

let t: TestServer;
let runnerToken: string;
let scratch: string;
beforeAll(async () => {
  t = await startTestServer({ maxArtifactsSize: 64 * 1024 });
  runnerToken = (await t.registerRunner()).token;
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-dotenv-rewrite-'));
});
afterAll(async () => {
  await t.close();
  await rm(scratch, { recursive: true, force: true });
});

async function build(config: string): Promise<BuildPayload> {
  await t.pipeline(config);
  const response = await api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runnerToken } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

/** A tar.gz of `files` (name → content). */
async function targz(files: Record<string, Buffer | string>): Promise<Buffer> {
  const dir = await mkdtemp(join(scratch, 'src-'));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of tar.c({ gzip: true, cwd: dir }, Object.keys(files))) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

const BOUNDARY = 'd07e4a1b2c3d4e5f';
function upload(payload: BuildPayload, archive: Buffer) {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="artifacts.tar.gz"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    archive,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return api(t.url, 'POST', `/builds/${payload.id}/artifacts`, { body, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': payload.token } });
}

async function tempEntries(): Promise<string[]> {
  return readdir(join(t.server.dataDir, 'tmp')).catch(() => []);
}

describe('dotenv report rewrite (API v1)', () => {
  it('never removes a file outside its work dir, whatever the report path says', async () => {
    const victim = join(scratch, 'victim.txt');
    await writeFile(victim, 'do not delete\n');
    const climbing = `${'../'.repeat(40)}${victim.slice(1)}`;
    const payload = await build(`a:\n  script: [x]\n  artifacts:\n    paths: [other.txt]\n    reports:\n      dotenv: [build.env, ${JSON.stringify(climbing)}]\n`);
    expect((await upload(payload, await targz({ 'build.env': 'A=1\n', 'other.txt': 'kept\n' }))).status).toBe(201);
    expect(await readFile(victim, 'utf8')).toBe('do not delete\n');
    expect(t.server.getJob(payload.id)?.dotenv_variables).toEqual(['A']);
    expect(await tempEntries()).toEqual([]);
  });

  it('does not inflate an archive past its budget to take a report out; the report is read all the same', async () => {
    // 2 MiB of zeros: a few KiB packed, more than 16 times the 64 KiB upload limit unpacked.
    const bomb = await targz({ 'build.env': 'B=2\n', 'zeros.bin': Buffer.alloc(2 * 1024 * 1024), 'other.txt': randomBytes(100) });
    expect(bomb.byteLength).toBeLessThan(64 * 1024);
    const payload = await build('b:\n  script: [x]\n  artifacts:\n    paths: [other.txt, zeros.bin]\n    reports:\n      dotenv: build.env\n');
    expect((await upload(payload, bomb)).status).toBe(201);
    const job = t.server.getJob(payload.id);
    expect(job?.dotenv_variables).toEqual(['B']);
    // Left as uploaded (the report file stays in it), not rewritten.
    expect(job?.artifacts?.size).toBe(bomb.byteLength);
    expect(await tempEntries()).toEqual([]);
  });
});
