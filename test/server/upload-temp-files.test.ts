/**
 * Issue 34 item 7: an artifacts upload takes exactly one `file` part, and whatever becomes of the
 * request (stored, refused before or after its file streamed, too big, cut off by the client) nothing
 * of it stays in the data dir's temp area. Over both APIs, which share the upload code.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO } from './raw-http.js';
import { registerV4, takeJob, v4 } from './v4-http.js';

let t: TestServer;
let v4Token: string;
let v1Token: string;
beforeAll(async () => {
  t = await startTestServer({ maxArtifactsSize: 64 * 1024 });
  v4Token = (await registerV4(t)).token;
  v1Token = (await t.registerRunner()).token;
});
afterAll(async () => {
  await t.close();
});

const BOUNDARY = 'c0ffee0123456789abcdef';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

function filePart(name: string, content: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.zip"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    content,
    Buffer.from('\r\n'),
  ]);
}

/** A multipart body of the given file parts, in one buffer (so every part reaches the server at once). */
function body(...parts: Array<[string, Buffer]>): Buffer {
  return Buffer.concat([...parts.map(([name, content]) => filePart(name, content)), Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

async function tempEntries(): Promise<string[]> {
  return readdir(join(t.server.dataDir, 'tmp')).catch(() => []);
}

/** Waits until the temp area is empty (the server removes files after it answers); returns what is left at the deadline. */
async function settledTemp(timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await tempEntries();
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function v4Job(): Promise<{ id: number; token: string }> {
  await t.pipeline('a:\n  script: [x]\n');
  return takeJob(t, v4Token);
}

async function v1Build(): Promise<BuildPayload> {
  await t.pipeline('a:\n  script: [x]\n');
  const response = await api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: v1Token } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

function uploadV4(job: { id: number; token: string }, payload: Buffer, query = '') {
  return v4(t.url, 'POST', `/jobs/${job.id}/artifacts${query}`, { body: payload, headers: { 'content-type': CONTENT_TYPE, 'job-token': job.token } });
}

describe('artifacts upload temp files', () => {
  it('refuses a second "file" part (400) over API v4 and keeps neither part', async () => {
    const job = await v4Job();
    const response = await uploadV4(job, body(['file', randomBytes(1000)], ['file', randomBytes(1000)]));
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).message).toMatch(/more than one "file" part/);
    expect(t.server.getJob(job.id)?.artifacts).toBeNull();
    expect(await settledTemp()).toEqual([]);
    // One part is fine, and leaves nothing behind once stored.
    expect((await uploadV4(job, body(['file', randomBytes(1000)]))).status).toBe(201);
    expect(await settledTemp()).toEqual([]);
  });

  it('refuses a second "file" part (400) over API v1 and keeps neither part', async () => {
    const build = await v1Build();
    const response = await api(t.url, 'POST', `/builds/${build.id}/artifacts`, {
      body: body(['file', randomBytes(1000)], ['file', randomBytes(1000)], ['file', randomBytes(1000)]),
      headers: { 'content-type': CONTENT_TYPE, 'build-token': build.token },
    });
    expect(response.status).toBe(400);
    expect(t.server.getJob(build.id)?.artifacts).toBeNull();
    expect(await settledTemp()).toEqual([]);
  });

  it('removes the part of an upload refused after it streamed: too big (413), a bad expire_in (400)', async () => {
    const job = await v4Job();
    expect((await uploadV4(job, body(['file', randomBytes(80 * 1024)]))).status).toBe(413);
    expect(await settledTemp()).toEqual([]);
    expect((await uploadV4(job, body(['file', randomBytes(1000)]), '?expire_in=whenever')).status).toBe(400);
    expect(await settledTemp()).toEqual([]);
    expect((await uploadV4(job, body(['file', randomBytes(1000)]), '?artifact_type=dotenv&artifact_format=raw')).status).toBe(400);
    expect(await settledTemp()).toEqual([]);
  });

  it('removes the part of an upload whose client goes away mid-file', async () => {
    const job = await v4Job();
    const { port } = new URL(t.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    socket.write(
      `POST /api/v4/jobs/${job.id}/artifacts HTTP/1.1\r\nHost: 127.0.0.1\r\nJob-Token: ${job.token}\r\nContent-Type: ${CONTENT_TYPE}\r\nContent-Length: ${head.byteLength + 50_000}\r\n\r\n`,
    );
    socket.write(head);
    socket.write(randomBytes(20_000));
    // The part is being stored...
    const deadline = Date.now() + 10_000;
    while ((await tempEntries()).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await tempEntries()).length).toBe(1);
    // ...when the client goes away.
    socket.destroy();
    expect(await settledTemp()).toEqual([]);
    expect(t.server.getJob(job.id)?.artifacts).toBeNull();
  });

  it('removes both parts when the client goes away right after sending two', async () => {
    const job = await v4Job();
    const { port } = new URL(t.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const parts = Buffer.concat([filePart('file', randomBytes(2000)), filePart('file', randomBytes(2000))]);
    socket.write(
      `POST /api/v4/jobs/${job.id}/artifacts HTTP/1.1\r\nHost: 127.0.0.1\r\nJob-Token: ${job.token}\r\nContent-Type: ${CONTENT_TYPE}\r\nContent-Length: ${parts.byteLength + 10_000}\r\n\r\n`,
    );
    socket.write(parts);
    // The server answers (400) without waiting for the rest; then the client goes.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5000);
      socket.once('data', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    socket.destroy();
    expect(await settledTemp()).toEqual([]);
  });
});
