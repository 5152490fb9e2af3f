/**
 * Issue 13 item 7: the server must not buffer the bodies of requests it is about to refuse. A real
 * `serve` process gets big unauthenticated bodies, all at once; it answers them while they are
 * still being sent and its resident memory barely moves. Authenticated big bodies still work.
 */
import { connect } from 'node:net';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitRepo } from '../helpers/git.js';
import { startTestServer } from '../helpers/server.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';
import { ADMIN_TOKEN, REGISTRATION_TOKEN, rssBytes, startServe, type ServeProcess } from './serve-process.js';

const MiB = 1024 * 1024;
const BODY_BYTES = 60 * MiB;

let serve: ServeProcess;
let repo: string;
beforeAll(async () => {
  repo = await createGitRepo({ 'README.md': 'hi\n' });
  serve = await startServe(['--project', `acme/app=${repo}`, '--log-level', 'warn']);
}, 60_000);
afterAll(async () => {
  serve.child.kill('SIGTERM');
  await serve.child;
  await rm(repo, { recursive: true, force: true });
});

interface Pushed {
  status: number | undefined;
  written: number;
}

/**
 * Sends a request declaring `total` body bytes: `prefix`, then filler, with backpressure. Stops
 * writing the moment a response arrives (as a client that reads early answers does).
 */
function pushBody(url: string, head: string, prefix: string, total: number): Promise<Pushed> {
  const { hostname, port } = new URL(url);
  return new Promise<Pushed>((resolve) => {
    const socket = connect(Number(port), hostname);
    let written = 0;
    let response = '';
    let answered = false;
    const finish = (): void => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1];
      socket.destroy();
      resolve({ status: status === undefined ? undefined : Number(status), written });
    };
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
      if (response.includes('\r\n\r\n')) {
        answered = true;
        finish();
      }
    });
    socket.on('error', finish);
    socket.on('close', finish);
    const filler = Buffer.alloc(MiB, 'a');
    const pump = (): void => {
      while (!answered && written < total) {
        const piece = filler.subarray(0, Math.min(filler.byteLength, total - written));
        written += piece.byteLength;
        if (!socket.write(piece)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    socket.on('connect', () => {
      socket.write(`${head}Host: ${hostname}\r\nContent-Length: ${total}\r\n\r\n${prefix}`);
      written = Buffer.byteLength(prefix);
      pump();
    });
  });
}

const JSON_PUT = (path: string): string => `PUT /ci/api/v1${path} HTTP/1.1\r\nContent-Type: application/json\r\n`;

describe('request bodies and authentication', () => {
  it('answers unauthenticated big bodies with 403 before reading them, and its memory stays flat', async () => {
    const before = rssBytes(serve.pid);
    if (before === undefined) {
      console.log('skipped the memory figure: /proc is not available on this system');
    }
    let peak = before ?? 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(serve.pid) ?? 0);
    }, 20);
    const results = await Promise.all([
      pushBody(serve.url, JSON_PUT('/builds/1.json'), '{"token":"0123456789abcdef0123456789abcd","state":"success","trace":"', BODY_BYTES),
      pushBody(serve.url, JSON_PUT('/builds/1.json'), `{"info":${JSON.stringify(LEGACY_INFO)},"token":"nope","trace":"`, BODY_BYTES),
      pushBody(serve.url, JSON_PUT('/builds/1'), '{"trace":"', BODY_BYTES),
      pushBody(serve.url, JSON_PUT('/builds/-1'), '{"state":"failed","trace":"', BODY_BYTES),
      pushBody(serve.url, JSON_PUT('/builds/1?token=wrong'), '{"trace":"', BODY_BYTES),
      pushBody(serve.url, 'PUT /ci/api/v1/builds/1 HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n', 'token=wrong&trace=', BODY_BYTES),
      pushBody(serve.url, 'PATCH /ci/api/v1/builds/1/trace.txt HTTP/1.1\r\nBUILD-TOKEN: wrong\r\nContent-Range: 0-62914560\r\n', '', BODY_BYTES),
      // Routes with small bodies refuse more than their cap (1 MiB) from the declared length alone.
      pushBody(serve.url, 'POST /ci/api/v1/runners/register.json HTTP/1.1\r\nContent-Type: application/json\r\n', '{"token":"not-the-registration-token","description":"', BODY_BYTES),
    ]);
    clearInterval(sampler);
    if (before !== undefined) {
      const grewMiB = (peak - before) / MiB;
      console.log(`serve RSS ${(before / MiB).toFixed(0)} MiB before, peak ${(peak / MiB).toFixed(0)} MiB during 8 refused big bodies`);
      expect(grewMiB).toBeLessThan(120);
    }
    for (const result of results) expect(result.written).toBeLessThan(BODY_BYTES / 2);
    expect(results.map((result) => result.status)).toEqual([403, 403, 403, 403, 403, 403, 404, 413]);
    // Still serving.
    expect((await api(serve.url, 'PUT', '/builds/-1', { json: { token: 'nope' } })).status).toBe(403);
  }, 120_000);

  it('still takes a big final trace from a runner whose token is in the body, or in the query string', async () => {
    const admin = { headers: { 'private-token': ADMIN_TOKEN } };
    const registered = await api(serve.url, 'POST', '/runners/register.json', { json: { token: REGISTRATION_TOKEN, info: LEGACY_INFO } });
    expect(registered.status).toBe(201);
    const runnerToken = (JSON.parse(registered.text) as { token: string }).token;
    const pipeline = await raw(serve.url, 'POST', '/admin/api/pipelines', {
      ...admin,
      json: { project: 'acme/app', config: 'a:\n  script: [x]\nb:\n  script: [y]\n' },
    });
    expect(pipeline.status).toBe(201);
    const ids: number[] = [];
    for (let i = 0; i < 2; i++) {
      const build = await api(serve.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: runnerToken } });
      expect(build.status).toBe(201);
      ids.push((JSON.parse(build.text) as { id: number }).id);
    }
    const trace = `${'line of output\n'.repeat(1.5 * MiB)}`; // 22.5 MiB
    const inBody = await api(serve.url, 'PUT', `/builds/${ids[0]}.json`, { json: { info: LEGACY_INFO, token: runnerToken, state: 'success', trace } });
    expect(inBody.status).toBe(200);
    const inQuery = await api(serve.url, 'PUT', `/builds/${ids[1]}.json?token=${runnerToken}`, { json: { state: 'failed', trace } });
    expect(inQuery.status).toBe(200);
    for (const [i, id] of ids.entries()) {
      const job = JSON.parse((await raw(serve.url, 'GET', `/admin/api/jobs/${id}`, admin)).text) as { status: string; trace_size: number };
      expect(job).toMatchObject({ status: i === 0 ? 'success' : 'failed', trace_size: Buffer.byteLength(trace) });
    }
  }, 120_000);
});

describe('the shared body budget', () => {
  it('makes concurrent authenticated bodies beyond the budget wait their turn instead of failing', async () => {
    const t = await startTestServer({ requestBodyMemory: MiB });
    try {
      const { token } = await t.registerRunner();
      await t.pipeline('a:\n  script: [x]\nb:\n  script: [y]\nc:\n  script: [z]\n');
      const builds = [];
      for (let i = 0; i < 3; i++) builds.push(JSON.parse((await api(t.url, 'POST', '/builds/register.json', { json: { token } })).text) as { id: number });
      // Each final PUT needs 0.7 MiB of a 1 MiB budget: they can only run one at a time.
      const trace = 'x'.repeat(0.7 * MiB);
      const answers = await Promise.all(builds.map((build) => api(t.url, 'PUT', `/builds/${build.id}.json`, { json: { token, state: 'success', trace } })));
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
      for (const build of builds) expect(t.server.getJob(build.id)).toMatchObject({ status: 'success', trace_size: trace.length });
    } finally {
      await t.close();
    }
  });
});
