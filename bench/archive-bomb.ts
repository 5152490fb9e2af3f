/**
 * Archive bombs through the download stage: a tar.gz and a zip of BENCH_BOMB_MB (default 1024) MiB
 * of zeros (~1 MB each) uploaded to the reference server, then downloaded, validated and extracted
 * by src/artifacts in a worker process, whose peak RSS and the disk it took at most are printed
 * next to an idle worker's and the inflated size (the aim: memory stays flat, one copy on disk).
 * Figures are printed, never asserted.
 *
 * This module is also its own worker: with BENCH_BOMB_WORKER set it runs one download and prints
 * one JSON line.
 */
import { mkdir, mkdtemp, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { downloadArtifacts } from '../src/artifacts/index.js';
import { RunnerApiClient } from '../src/client/runner-api.js';
import type { BuildPayload } from '../src/protocol/types.js';
import { createReferenceServer } from '../src/server/index.js';
import { writeTarGzBomb, writeZipBomb } from '../test/helpers/bombs.js';

interface WorkerJob {
  idle: boolean;
  url: string;
  build: BuildPayload;
  projectDir: string;
  stateDir: string;
}

interface WorkerResult {
  seconds: number;
  maxRssMiB: number;
  lines: string[];
}

const MiB = 1024 * 1024;

if (process.env.BENCH_BOMB_WORKER) {
  const job = JSON.parse(await readFile(process.env.BENCH_BOMB_WORKER, 'utf8')) as WorkerJob;
  const client = new RunnerApiClient({ url: job.url });
  const lines: string[] = [];
  const ctx = { build: job.build, client, projectDir: job.projectDir, stateDir: job.stateDir, log: (line: string) => lines.push(line), signal: new AbortController().signal };
  const started = performance.now();
  if (!job.idle) await downloadArtifacts(ctx, { attempts: 1 });
  const result: WorkerResult = { seconds: (performance.now() - started) / 1000, maxRssMiB: process.resourceUsage().maxRSS / 1024, lines };
  await client.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

async function runWorker(job: WorkerJob, scratch: string): Promise<WorkerResult & { diskPeakMiB: number }> {
  const file = join(scratch, `worker-${Date.now()}.json`);
  await writeFile(file, JSON.stringify(job));
  // The filesystem's use is sampled while the worker runs: other processes share it, so this is an
  // upper bound of what the worker took.
  const used = async (): Promise<number> => {
    const stats = await statfs(scratch);
    return (stats.blocks - stats.bfree) * stats.bsize;
  };
  const before = await used();
  let peak = before;
  const timer = setInterval(() => {
    void used().then((now) => (peak = Math.max(peak, now)), () => undefined);
  }, 20);
  try {
    const { stdout } = await execa(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], { env: { BENCH_BOMB_WORKER: file }, stdin: 'ignore' });
    return { ...(JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as WorkerResult), diskPeakMiB: (peak - before) / MiB };
  } finally {
    clearInterval(timer);
  }
}

export async function run(): Promise<void> {
  const sizeMiB = Number(process.env.BENCH_BOMB_MB ?? 1024);
  const scratch = await mkdtemp(join(tmpdir(), 'ci-bench-bomb-'));
  try {
    const repo = join(scratch, 'repo');
    await mkdir(repo);
    await execa('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    await writeFile(join(repo, 'README.md'), 'bench\n');
    await execa('git', ['add', '-A'], { cwd: repo });
    await execa('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com', 'commit', '-q', '-m', 'init'], { cwd: repo });
    const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], dataDir: join(scratch, 'server') });
    const client = new RunnerApiClient({ url: server.url });
    try {
      const runnerToken = (await client.registerRunner({ token: server.registrationToken, runUntagged: true })).runner?.token ?? '';
      const next = async (): Promise<BuildPayload> => {
        const result = await client.requestBuild(runnerToken, undefined);
        if (result.kind !== 'build') throw new Error(`no build (${result.kind})`);
        return result.build;
      };
      let idle: number | undefined;
      process.stdout.write(`each archive inflates to ${sizeMiB} MiB (BENCH_BOMB_MB)\n`);
      for (const format of ['tar.gz', 'zip'] as const) {
        const archive = join(scratch, `bomb.${format}`);
        await (format === 'zip' ? writeZipBomb(archive, sizeMiB * MiB) : writeTarGzBomb(archive, sizeMiB * MiB));
        await server.createPipeline({ project: 'bench/project', config: 'stages: [build, test]\nmake:\n  stage: build\n  script: [x]\nuse:\n  stage: test\n  script: [x]\n' });
        const make = await next();
        await client.uploadArtifacts(make.id, make.token, { path: archive, filename: `artifacts.${format}` });
        await client.updateBuild(make.id, runnerToken, { state: 'success', trace: '' });
        const use = await next();
        const projectDir = join(scratch, `project-${format.replace('.', '-')}`);
        const stateDir = join(scratch, `state-${format.replace('.', '-')}`);
        await mkdir(projectDir);
        await mkdir(stateDir);
        idle ??= (await runWorker({ idle: true, url: server.url, build: use, projectDir, stateDir }, scratch)).maxRssMiB;
        const result = await runWorker({ idle: false, url: server.url, build: use, projectDir, stateDir }, scratch);
        await client.updateBuild(use.id, runnerToken, { state: 'success', trace: '' });
        process.stdout.write(
          `  ${format.padEnd(7)} ${result.seconds.toFixed(2).padStart(6)} s  peak RSS ${result.maxRssMiB.toFixed(0).padStart(5)} MiB (idle worker ${idle.toFixed(0)} MiB)  disk at most ${result.diskPeakMiB.toFixed(0)} MiB for ${sizeMiB} MiB of files\n`,
        );
        await rm(projectDir, { recursive: true, force: true });
        await rm(stateDir, { recursive: true, force: true });
      }
    } finally {
      await client.close();
      await server.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
