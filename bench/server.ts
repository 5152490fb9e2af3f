/**
 * Reference server figures: time from `ci-runner serve` being spawned to its ready block (the aim:
 * under 1 s), idle E4 polls per second (the last_update short-circuit), and how long a
 * long-polling runner takes to receive a build after it is queued.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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
  } finally {
    await client.close();
    await server.close();
  }
}
