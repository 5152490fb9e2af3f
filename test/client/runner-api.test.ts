import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('RunnerApiClient against the reference server', () => {
  let ts: TestServer;
  let client: RunnerApiClient;
  let dir: string;

  beforeAll(async () => {
    ts = await startTestServer();
    client = new RunnerApiClient({ url: ts.url, executor: 'shell' });
    dir = await mkdtemp(join(tmpdir(), 'client-test-'));
  });

  afterAll(async () => {
    await client.close();
    await ts.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('registers with the registration token and refuses a wrong one', async () => {
    const ok = await client.registerRunner({ token: ts.server.registrationToken, description: 'c', runUntagged: true });
    expect(ok.outcome).toBe('ok');
    expect(ok.runner?.token.length).toBeGreaterThanOrEqual(8);
    const bad = await client.registerRunner({ token: 'wrong', runUntagged: true });
    expect(bad.status).toBe(403);
    expect(bad.outcome).toBe('final');
    expect(bad.runner).toBeUndefined();
  });

  it('verifies a live runner through PUT /builds/-1 and sees a deleted one as gone', async () => {
    const { token } = await ts.registerRunner();
    expect((await client.verifyRunner(token)).alive).toBe(true);
    expect((await client.deleteRunner(token)).status).toBe(200);
    expect((await client.verifyRunner(token)).alive).toBe(false);
    expect((await client.deleteRunner(token)).outcome).toBe('final');
  });

  it('gets no build with a last_update value, then the build once one is queued', async () => {
    const { token } = await ts.registerRunner();
    const none = await client.requestBuild(token, undefined);
    expect(none.kind).toBe('none');
    const lastUpdate = none.kind === 'none' ? none.lastUpdate : undefined;
    expect(lastUpdate).toBeTruthy();
    expect((await client.requestBuild(token, lastUpdate)).kind).toBe('none');

    await ts.pipeline('only:\n  script: [echo hi]\n');
    const got = await client.requestBuild(token, lastUpdate);
    expect(got.kind).toBe('build');
    if (got.kind !== 'build') return;
    expect(got.build.commands).toBe('echo hi');
    expect(got.build.sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it('appends trace parts, learns the server length on a 416, and finishes with a full PUT', async () => {
    const { token } = await ts.registerRunner();
    await ts.pipeline('trace:\n  script: [echo hi]\n');
    const got = await client.requestBuild(token, undefined);
    if (got.kind !== 'build') throw new Error(`expected a build, got ${got.kind}`);
    const { id, token: buildToken } = got.build;

    const first = await client.patchTrace(id, buildToken, 0, Buffer.from('hello '));
    expect(first).toMatchObject({ status: 202, outcome: 'ok', serverLength: 6, buildStatus: 'running' });
    const stale = await client.patchTrace(id, buildToken, 0, Buffer.from('hello '));
    expect(stale).toMatchObject({ status: 416, serverLength: 6 });
    const keepalive = await client.patchTrace(id, buildToken, 6, new Uint8Array());
    expect(keepalive).toMatchObject({ status: 202, serverLength: 6 });

    expect((await client.updateBuild(id, token, { state: 'success', trace: 'hello world\n' })).status).toBe(200);
    expect((await ts.server.getTrace(id)).toString()).toBe('hello world\n');
    expect(ts.server.getJob(id)?.status).toBe('success');
    // The build is no longer running: a further update is refused with 404, which is final.
    expect(await client.updateBuild(id, token, { state: 'failed' })).toMatchObject({ status: 404, outcome: 'final' });
  });

  it('uploads an archive as streamed multipart and downloads the same bytes', async () => {
    const { token } = await ts.registerRunner();
    await ts.pipeline('art:\n  script: [echo hi]\n');
    const got = await client.requestBuild(token, undefined);
    if (got.kind !== 'build') throw new Error(`expected a build, got ${got.kind}`);
    const source = join(dir, 'up.bin');
    const bytes = Buffer.alloc(300_000, 7);
    await writeFile(source, bytes);

    const up = await client.uploadArtifacts(got.build.id, got.build.token, { path: source, filename: 'artifacts.tar.gz', expireIn: '1 week' });
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ artifacts_file: { filename: 'artifacts.tar.gz', size: bytes.length } });

    const target = join(dir, 'down.bin');
    const down = await client.downloadArtifacts(got.build.id, got.build.token, target);
    expect(down).toMatchObject({ status: 200, size: bytes.length });
    expect((await readFile(target)).equals(bytes)).toBe(true);

    const missing = await client.downloadArtifacts(got.build.id, 'not-the-token', join(dir, 'nope.bin'));
    expect(missing).toMatchObject({ status: 403, outcome: 'final' });
  });

  it('reports a transport error as status -1 instead of throwing', async () => {
    const dead = new RunnerApiClient({ url: 'http://127.0.0.1:9/', requestTimeoutMs: 5_000 });
    const result = await dead.verifyRunner('x');
    expect(result.status).toBe(-1);
    expect(result.outcome).toBe('retry');
    expect(result.error).toBeInstanceOf(Error);
    await dead.close();
  });

  it('rejects with the reason when the caller aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(client.verifyRunner('x', controller.signal)).rejects.toBe(reason);
  });
});

describe('RunnerApiClient with a malformed build answer', () => {
  /** A coordinator that answers every build request with `reply`; anything else is a 404. */
  async function mockedClient(reply: { body: string; type: string }): Promise<{ client: RunnerApiClient; agent: { close(): Promise<void> } }> {
    const server: Server = createServer((req, res) => {
      req.resume();
      if (req.method !== 'POST' || req.url !== '/ci/api/v1/builds/register.json') return void res.writeHead(404).end();
      res.writeHead(201, { 'content-type': reply.type }).end(reply.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new RunnerApiClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    const close = async (): Promise<void> => {
      await client.close();
      await new Promise((resolve) => server.close(resolve));
    };
    return { client, agent: { close } };
  }

  it('keeps the id and token of a build whose payload does not validate', async () => {
    const { client, agent } = await mockedClient({ body: JSON.stringify({ id: 12, token: 'bt', sha: 'short' }), type: 'application/json' });
    const result = await client.requestBuild('runner', undefined);
    expect(result).toMatchObject({ kind: 'invalid-build', id: 12, token: 'bt' });
    if (result.kind === 'invalid-build') expect(result.message).toMatch(/sha/);
    await agent.close();
  });

  it('treats a build sent with the wrong content type as invalid, not as no build', async () => {
    const payload = { id: 3, ref: 'main', sha: '0123456789abcdef0123', name: 'x', token: 'bt', project_id: 1, repo_url: 'http://h/a/b.git' };
    const { client, agent } = await mockedClient({ body: JSON.stringify(payload), type: 'text/html' });
    const result = await client.requestBuild('runner', undefined);
    expect(result).toMatchObject({ kind: 'invalid-build', id: 3, token: 'bt' });
    await agent.close();
  });

  it('reports a body that is not JSON as invalid without an id', async () => {
    const { client, agent } = await mockedClient({ body: '<html>', type: 'application/json' });
    const result = await client.requestBuild('runner', undefined);
    expect(result.kind).toBe('invalid-build');
    expect(result).not.toHaveProperty('id');
    await agent.close();
  });
});

describe('RunnerApiClient downloading from a server that sends too much', () => {
  it('cuts the download off once it passes maxBytes instead of filling the disk', async () => {
    const { createServer } = await import('node:http');
    const { stat } = await import('node:fs/promises');
    const chunk = Buffer.alloc(64 * 1024, 1);
    let sent = 0;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const pump = (): void => {
        // Up to 256 MiB unless the client hangs up first.
        while (sent < 256 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as import('node:net').AddressInfo;
    const dir = await mkdtemp(join(tmpdir(), 'client-big-'));
    const client = new RunnerApiClient({ url: `http://127.0.0.1:${port}` });
    try {
      const target = join(dir, 'a.bin');
      const result = await client.downloadArtifacts(1, 't', target, undefined, { maxBytes: 100_000 });
      expect(result.status).toBe(-1);
      expect(result.outcome).toBe('retry');
      expect(result.error?.message).toMatch(/larger than the announced 100000 bytes/);
      expect((await stat(target)).size).toBeLessThan(1024 * 1024);
      expect(sent).toBeLessThan(256 * 1024 * 1024);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });
});
