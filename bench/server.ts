/**
 * Reference server figures: time from `ci-runner serve` being spawned to its ready block (the aim:
 * under 1 s), idle E4 polls per second (the last_update short-circuit), and how long a
 * long-polling runner takes to receive a build after it is queued; the last two over API v4 too.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { RunnerApiClient } from '../src/client/runner-api.js';
import { createReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';

const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function timeToReady(): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--log-level', 'silent'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('is ready')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code} before it was ready`)));
  });
  const elapsed = performance.now() - started;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return elapsed;
}

/** POSTs JSON to `/api/v4` with undici (no client code: the server's figures alone). */
async function v4Post(base: string, path: string, body: unknown): Promise<{ status: number; lastUpdate?: string; json?: { id: number; token: string } }> {
  const response = await request(`${base}/api/v4${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.body.text();
  const lastUpdate = response.headers['x-gitlab-last-update'];
  return { status: response.statusCode, ...(typeof lastUpdate === 'string' ? { lastUpdate } : {}), ...(response.statusCode === 201 ? { json: JSON.parse(text) as { id: number; token: string } } : {}) };
}

/** The same over API v4: idle job requests per second, and the long-poll pickup as Workhorse holds it. */
async function v4Figures(server: Awaited<ReturnType<typeof createReferenceServer>>): Promise<void> {
  const { token } = (await v4Post(server.url, '/runners', { token: server.registrationToken, run_untagged: true })).json ?? { token: '' };
  const plain = await createReferenceServer({});
  try {
    const plainToken = (await v4Post(plain.url, '/runners', { token: plain.registrationToken, run_untagged: true })).json?.token ?? '';
    const lastUpdate = (await v4Post(plain.url, '/jobs/request', { token: plainToken })).lastUpdate;
    const count = 2000;
    const started = performance.now();
    for (let i = 0; i < count; i++) await v4Post(plain.url, '/jobs/request', { token: plainToken, last_update: lastUpdate });
    console.log(`idle job requests over v4 (204, sequential): ${(count / ((performance.now() - started) / 1000)).toFixed(0)} req/s`);
  } finally {
    await plain.close();
  }
  const pickups: number[] = [];
  let lastUpdate = (await v4Post(server.url, '/jobs/request', { token })).lastUpdate;
  for (let i = 0; i < 20; i++) {
    const waiting = v4Post(server.url, '/jobs/request', { token, last_update: lastUpdate });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const queued = performance.now();
    await server.createPipeline({ project: 'bench/app', config: 'job:\n  script: [exit 0]\n' });
    const got = await waiting;
    pickups.push(performance.now() - queued);
    if (!got.json) throw new Error(`expected a job, got ${got.status}`);
    await request(`${server.url}/api/v4/jobs/${got.json.id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: got.json.token, state: 'success' }) }).then((r) => r.body.text());
    lastUpdate = (await v4Post(server.url, '/jobs/request', { token })).lastUpdate;
  }
  console.log(`long-poll pickup over v4 (queued → job received, held with last_update), 20 jobs: p50 ${percentile(pickups, 50).toFixed(1)} ms, p95 ${percentile(pickups, 95).toFixed(1)} ms`);
}

export async function run(): Promise<void> {
  const startups: number[] = [];
  for (let i = 0; i < 10; i++) startups.push(await timeToReady());
  console.log(`serve ready (spawn → ready block), 10 runs: p50 ${percentile(startups, 50).toFixed(0)} ms, p95 ${percentile(startups, 95).toFixed(0)} ms (aim < 1000 ms)`);

  const repo = await createGitRepo({ 'README.md': 'bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/app', path: repo }], longPollMs: 10_000 });
  const client = new RunnerApiClient({ url: server.url, executor: 'shell' });
  try {
    const registered = await client.registerRunner({ token: server.registrationToken, runUntagged: true });
    const token = registered.runner?.token ?? '';

    // Idle polls with a current last_update are answered without a search; long polling is on, so
    // measure with a second server without it to count plain round trips.
    const plain = await createReferenceServer({});
    const plainClient = new RunnerApiClient({ url: plain.url, executor: 'shell' });
    const plainToken = (await plainClient.registerRunner({ token: plain.registrationToken, runUntagged: true })).runner?.token ?? '';
    let lastUpdate: string | undefined;
    const first = await plainClient.requestBuild(plainToken, undefined);
    if (first.kind === 'none') lastUpdate = first.lastUpdate;
    const count = 2000;
    const pollStart = performance.now();
    for (let i = 0; i < count; i++) await plainClient.requestBuild(plainToken, lastUpdate);
    const pollSeconds = (performance.now() - pollStart) / 1000;
    console.log(`idle polls (E4 → 204, one connection, sequential): ${(count / pollSeconds).toFixed(0)} req/s`);
    await plainClient.close();
    await plain.close();

    const pickups: number[] = [];
    for (let i = 0; i < 20; i++) {
      const waiting = client.requestBuild(token, undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const queued = performance.now();
      await server.createPipeline({ project: 'bench/app', config: 'job:\n  script: [exit 0]\n' });
      const got = await waiting;
      const picked = performance.now();
      if (got.kind !== 'build') throw new Error(`expected a build, got ${got.kind}`);
      pickups.push(picked - queued);
      await client.updateBuild(got.build.id, token, { state: 'success', trace: '' });
    }
    console.log(`long-poll pickup (queued → build received), 20 builds: p50 ${percentile(pickups, 50).toFixed(1)} ms, p95 ${percentile(pickups, 95).toFixed(1)} ms`);
    await v4Figures(server);
  } finally {
    await client.close();
    await server.close();
  }
}
