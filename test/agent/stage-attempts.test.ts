/**
 * The control variables that try a stage again, end to end on a shell runner (the stages they retry run
 * in the runner process, or on its host, for the docker and kubernetes executors alike):
 * RESTORE_CACHE_ATTEMPTS against a store that fails the first attempt, ARTIFACT_DOWNLOAD_ATTEMPTS against
 * the reference server failing a download. GET_SOURCES_ATTEMPTS: chained-stages.test.ts (shell) and the
 * docker and kubernetes stages tests.
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { workDirs } from '../cli/helpers.js';
import { logText } from '../helpers/log-text.js';
import { runOnce } from '../helpers/run-once.js';
import { s3, s3CacheConfig, skipS3 } from '../helpers/s3.js';
import { useTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
useTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

/** Runs the next job on a shell runner with `runner` keys; `onOutput` sees the job's log as it is written. */
async function runNext(runner: Record<string, unknown>, onOutput?: (text: string) => void): Promise<void> {
  const d = await workDirs();
  const config = runnerSchema.parse({ name: 'attempts-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...runner });
  const never = new AbortController().signal;
  const services = { ...defaultServices(silentLogger()), ...(onOutput ? { onOutput: (_build: unknown, chunk: string | Uint8Array) => onOutput(chunk.toString()) } : {}) };
  await runOnce({ runner: config, services, waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
}

async function outcome(id: number): Promise<{ status: string | undefined; trace: string }> {
  return { status: t.server.getJob(id)?.status, trace: logText(await t.server.getTrace(id)) };
}

/** A TCP proxy to `target` that drops every connection until `open()`: a store that is down, then back. */
async function flakyProxy(target: URL): Promise<{ port: number; open(): void; close(): Promise<void> }> {
  let up = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    if (!up) return void socket.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    open: () => void (up = true),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.skipIf(skipS3)('RESTORE_CACHE_ATTEMPTS', () => {
  it('tries the restore again when the store could not be reached, as often as it says', async () => {
    const env = s3!;
    const cache = (serverAddress?: string) => s3CacheConfig(env, { cache: { Path: `ci-runner-test-attempts-${randomBytes(3).toString('hex')}`, Shared: true }, s3: serverAddress ? { ServerAddress: serverAddress } : {} });
    const direct = cache();
    const key = `attempts-${randomBytes(3).toString('hex')}`;
    const yaml = (attempts: string) => `stages: [save, load]
save:
  stage: save
  cache: { key: ${key}, paths: [vendor/] }
  script:
    - mkdir -p vendor && echo "from the store" > vendor/dep.txt
load:
  stage: load
  variables:
    RESTORE_CACHE_ATTEMPTS: "${attempts}"
  cache: { key: ${key}, paths: [vendor/], policy: pull }
  script:
    - cat vendor/dep.txt
`;
    for (const attempts of ['1', '2']) {
      const proxy = await flakyProxy(env.endpoint);
      try {
        const p = await t.pipeline(yaml(attempts));
        await runNext({ cache: direct });
        expect((await outcome(p.jobs[0]!.id)).status).toBe('success');
        // The loading runner reaches the store through the proxy, which lets nothing through until the first attempt failed.
        await runNext({ cache: { ...direct, s3: { ...direct.s3, ServerAddress: `127.0.0.1:${proxy.port}` } } }, (text) => {
          if (text.includes('Failed to extract cache')) proxy.open();
        });
        const load = await outcome(p.jobs[1]!.id);
        if (attempts === '1') {
          expect(load.status).toBe('failed');
          expect(load.trace).not.toContain('from the store');
        } else {
          expect(load.status, load.trace).toBe('success');
          expect(load.trace).toMatch(/WARNING: Failed to extract cache\s+WARNING: Retrying\.\.\.\s+Checking cache for [^\n]+\s+Downloaded cache from/);
          expect(load.trace).toContain('from the store');
        }
      } finally {
        await proxy.close();
      }
    }
  }, 120_000);
});

describe('ARTIFACT_DOWNLOAD_ATTEMPTS', () => {
  it('downloads a dependency\'s artifacts again after a server error, as often as it says', async () => {
    const yaml = (attempts: string) => `stages: [make, use]
make:
  stage: make
  script:
    - echo made > out.txt
  artifacts: { paths: [out.txt] }
use:
  stage: use
  variables:
    ARTIFACT_DOWNLOAD_ATTEMPTS: "${attempts}"
  script:
    - cat out.txt
`;
    for (const attempts of ['1', '2']) {
      const p = await t.pipeline(yaml(attempts));
      await runNext({});
      expect((await outcome(p.jobs[0]!.id)).status).toBe('success');
      const use = p.jobs[1]!.id;
      // The download names the dependency's job.
      t.server.faults.add({ endpoint: 'download_artifacts', action: 'error', status: 502, count: 1, buildId: p.jobs[0]!.id });
      await runNext({});
      const { status, trace } = await outcome(use);
      if (attempts === '1') {
        expect(status).toBe('failed');
        expect(trace).toContain('failed after 1 attempt(s): HTTP 502');
      } else {
        expect(status, trace).toBe('success');
        expect(trace).toMatch(/downloading artifacts of make failed \(HTTP 502\); retrying in [\d.]+ s \(attempt 2 of 2\)/);
        expect(trace).toMatch(/^made$/m);
      }
    }
  }, 60_000);
});
