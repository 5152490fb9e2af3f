/**
 * What a durable data dir (`serve --data-dir`) costs: builds run through the server (queue, assign,
 * trace part, finish) per second in memory and with `dataDir` (every change journaled and synced),
 * and how long a restart takes to load the resulting state.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerApiClient } from '../src/client/runner-api.js';
import { createReferenceServer, type ReferenceServerOptions } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';

const PIPELINES = 40;
const CONFIG = 'a:\n  script: [x]\nb:\n  script: [y]\nc:\n  script: [z]\n';

async function buildsPerSecond(options: ReferenceServerOptions, repo: string): Promise<number> {
  const server = await createReferenceServer({ ...options, projects: [{ name: 'bench/app', path: repo }] });
  const client = new RunnerApiClient({ url: server.url, executor: 'shell' });
  try {
    const token = (await client.registerRunner({ token: server.registrationToken, runUntagged: true })).runner?.token ?? '';
    const started = performance.now();
    let builds = 0;
    for (let p = 0; p < PIPELINES; p++) {
      await server.createPipeline({ project: 'bench/app', config: CONFIG });
      for (;;) {
        const result = await client.requestBuild(token, undefined);
        if (result.kind !== 'build') break;
        const { id, token: buildToken } = result.build;
        await client.patchTrace(id, buildToken, 0, Buffer.from('output\n'));
        await client.updateBuild(id, token, { state: 'success', trace: 'output\n' });
        builds += 1;
      }
    }
    return builds / ((performance.now() - started) / 1000);
  } finally {
    await client.close();
    await server.close();
  }
}

export async function run(): Promise<void> {
  const repo = await createGitRepo({ 'README.md': 'bench\n' });
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-state-'));
  try {
    console.log(`builds through the server, in memory: ${(await buildsPerSecond({}, repo)).toFixed(0)} builds/s`);
    const dataDir = join(root, 'data');
    console.log(`builds through the server, durable --data-dir: ${(await buildsPerSecond({ dataDir }, repo)).toFixed(0)} builds/s`);
    const started = performance.now();
    const restarted = await createReferenceServer({ dataDir });
    const loadMs = performance.now() - started;
    console.log(`restart on that data dir (${restarted.listJobs().length} builds): ${loadMs.toFixed(0)} ms to listening`);
    await restarted.close();
  } finally {
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}
