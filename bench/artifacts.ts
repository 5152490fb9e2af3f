/**
 * Artifacts upload and download through the reference server, next to `tar czf` + `curl` doing the
 * same on the same machine. Data: BENCH_ARTIFACTS_MB (default 200) MB of mixed files — many small
 * text-like files (~40 % of the bytes) and a few large binary ones. Each side runs in its own
 * process so peak RSS is the runner side's alone (the server stays in this process). The machine
 * is shared, so each figure is the best of BENCH_ARTIFACTS_RUNS (default 2) rounds, and ci-runner
 * and the baseline run back to back in every round. Figures are printed, never asserted.
 *
 * This module is also its own worker: run with BENCH_ARTIFACTS_WORKER set, it performs one stage
 * (upload or download) with src/artifacts and prints one JSON line.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { downloadArtifacts, uploadArtifacts } from '../src/artifacts/index.js';
import { RunnerApiClient } from '../src/client/runner-api.js';
import type { BuildPayload } from '../src/protocol/types.js';
import { createReferenceServer } from '../src/server/index.js';

interface WorkerJob {
  stage: 'upload' | 'download' | 'idle';
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

if (process.env.BENCH_ARTIFACTS_WORKER) {
  const job = JSON.parse(await readFile(process.env.BENCH_ARTIFACTS_WORKER, 'utf8')) as WorkerJob;
  const client = new RunnerApiClient({ url: job.url });
  const lines: string[] = [];
  const ctx = { build: job.build, client, projectDir: job.projectDir, stateDir: job.stateDir, log: (line: string) => lines.push(line), signal: new AbortController().signal };
  const started = performance.now();
  if (job.stage === 'upload') await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: true });
  if (job.stage === 'download') await downloadArtifacts(ctx, { attempts: 1 });
  const result: WorkerResult = { seconds: (performance.now() - started) / 1000, maxRssMiB: process.resourceUsage().maxRSS / 1024, lines };
  await client.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Writes ~`totalMiB` of mixed files under `dir/data`; returns the file count. */
async function generate(dir: string, totalMiB: number): Promise<number> {
  const total = totalMiB * MiB;
  let files = 0;
  let small = 0;
  // Small files: base64 of random bytes (compresses to ~75 %), 1–64 KiB, 40 per directory.
  while (small < total * 0.4) {
    const size = 1024 + Math.floor(Math.random() * 63 * 1024);
    const sub = join(dir, 'data', 'src', `d${Math.floor(files / 40)}`);
    if (files % 40 === 0) await mkdir(sub, { recursive: true });
    await writeFile(join(sub, `f${files}.txt`), randomBytes(Math.ceil((size * 3) / 4)).toString('base64').slice(0, size));
    small += size;
    files += 1;
  }
  // Large files: incompressible, written in 4 MiB pieces to keep this generator's memory flat.
  await mkdir(join(dir, 'data', 'bin'), { recursive: true });
  const large = total - small;
  const count = 4;
  for (let i = 0; i < count; i += 1) {
    const path = join(dir, 'data', 'bin', `blob${i}.bin`);
    await writeFile(path, '');
    for (let written = 0; written < large / count; written += 4 * MiB) {
      await writeFile(path, randomBytes(Math.min(4 * MiB, Math.ceil(large / count - written))), { flag: 'a' });
    }
    files += 1;
  }
  return files;
}

async function runWorker(job: WorkerJob, scratch: string): Promise<WorkerResult> {
  const file = join(scratch, `worker-${job.stage}-${Date.now()}.json`);
  await writeFile(file, JSON.stringify(job));
  const self = fileURLToPath(import.meta.url);
  const { stdout } = await execa(process.execPath, ['--import', 'tsx', self], { env: { BENCH_ARTIFACTS_WORKER: file }, stdin: 'ignore' });
  const last = stdout.trim().split('\n').pop() ?? '{}';
  return JSON.parse(last) as WorkerResult;
}

/** Runs a shell command under GNU time; returns wall seconds and peak RSS in MiB. */
async function timed(command: string, cwd: string): Promise<{ seconds: number; maxRssMiB: number }> {
  const result = await execa('/usr/bin/time', ['-f', 'BENCH %e %M', 'bash', '-c', command], { cwd, stdin: 'ignore', reject: true });
  const match = /BENCH ([\d.]+) (\d+)/.exec(result.stderr);
  return { seconds: Number(match?.[1] ?? NaN), maxRssMiB: Number(match?.[2] ?? NaN) / 1024 };
}

function row(label: string, mib: number, seconds: number, rss: number): string {
  return `  ${label.padEnd(38)} ${seconds.toFixed(2).padStart(7)} s  ${(mib / seconds).toFixed(1).padStart(7)} MiB/s  peak RSS ${rss.toFixed(0).padStart(5)} MiB`;
}

export async function run(): Promise<void> {
  const sizeMiB = Number(process.env.BENCH_ARTIFACTS_MB ?? 200);
  const scratch = await mkdtemp(join(tmpdir(), 'ci-bench-artifacts-'));
  try {
    const repo = join(scratch, 'repo');
    await mkdir(repo);
    await execa('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    await writeFile(join(repo, 'README.md'), 'bench\n');
    await execa('git', ['add', '-A'], { cwd: repo });
    await execa('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com', 'commit', '-q', '-m', 'init'], { cwd: repo });
    const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], maxArtifactsSize: 64 * 1024 * MiB, dataDir: join(scratch, 'server') });
    const client = new RunnerApiClient({ url: server.url });
    try {
      const registered = await client.registerRunner({ token: server.registrationToken, runUntagged: true });
      const runnerToken = registered.runner?.token ?? '';
      const next = async (): Promise<BuildPayload> => {
        const result = await client.requestBuild(runnerToken, undefined);
        if (result.kind !== 'build') throw new Error(`no build (${result.kind})`);
        return result.build;
      };
      const project = join(scratch, 'project');
      const files = await generate(project, sizeMiB);
      process.stdout.write(`data: ${sizeMiB} MiB in ${files} files (60 % in 4 incompressible files, 40 % in small base64 text files)\n`);

      const rounds = Math.max(1, Number(process.env.BENCH_ARTIFACTS_RUNS ?? 2));
      process.stdout.write(`best of ${rounds} round(s) (BENCH_ARTIFACTS_RUNS); each round runs ci-runner and the baseline back to back\n`);
      const best: Record<string, { seconds: number; maxRssMiB: number }> = {};
      const keep = (label: string, figure: { seconds: number; maxRssMiB: number }): void => {
        const known = best[label];
        best[label] = known ? { seconds: Math.min(known.seconds, figure.seconds), maxRssMiB: Math.max(known.maxRssMiB, figure.maxRssMiB) } : figure;
      };
      let idleRss = 0;
      let lines: string[] = [];
      const api = `${server.url}/ci/api/v1/builds`;
      for (let round = 0; round < rounds; round += 1) {
        await server.createPipeline({ project: 'bench/project', config: 'stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [data/] }\nuse:\n  stage: test\n  script: [x]\n' });
        const make = await next();
        if (round === 0) idleRss = (await runWorker({ stage: 'idle', url: server.url, build: make, projectDir: project, stateDir: scratch }, scratch)).maxRssMiB;
        const up = await runWorker({ stage: 'upload', url: server.url, build: make, projectDir: project, stateDir: scratch }, scratch);
        await client.updateBuild(make.id, runnerToken, { state: 'success', trace: '' });
        const use = await next();
        const into = join(scratch, `extracted-${round}`);
        await mkdir(into);
        const down = await runWorker({ stage: 'download', url: server.url, build: use, projectDir: into, stateDir: scratch }, scratch);
        await client.updateBuild(use.id, runnerToken, { state: 'success', trace: '' });
        await rm(into, { recursive: true, force: true });
        keep('upload', up);
        keep('download', down);
        lines = [...up.lines, ...down.lines];

        await server.createPipeline({ project: 'bench/project', config: 'base:\n  script: [x]\n' });
        const base = await next();
        keep('tar czf', await timed(`tar czf ${scratch}/baseline.tar.gz data`, project));
        keep('curl -F', await timed(`curl -sf -o /dev/null -H 'BUILD-TOKEN: ${base.token}' -F file=@${scratch}/baseline.tar.gz '${api}/${base.id}/artifacts'`, scratch));
        await rm(join(scratch, 'baseline.tar.gz'));
        keep('curl GET', await timed(`curl -sf -o ${scratch}/baseline-down.tar.gz -H 'BUILD-TOKEN: ${make.token}' '${api}/${make.id}/artifacts'`, scratch));
        await mkdir(join(scratch, 'baseline-extract'));
        keep('tar xzf', await timed(`tar xzf ${scratch}/baseline-down.tar.gz -C ${scratch}/baseline-extract`, scratch));
        await rm(join(scratch, 'baseline-extract'), { recursive: true, force: true });
        await rm(join(scratch, 'baseline-down.tar.gz'), { force: true });
        await client.updateBuild(base.id, runnerToken, { state: 'success', trace: '' });
      }

      const figure = (label: string): { seconds: number; maxRssMiB: number } => best[label] ?? { seconds: NaN, maxRssMiB: NaN };
      const sum = (a: string, b: string): { seconds: number; maxRssMiB: number } => ({ seconds: figure(a).seconds + figure(b).seconds, maxRssMiB: Math.max(figure(a).maxRssMiB, figure(b).maxRssMiB) });
      const print = (label: string, value: { seconds: number; maxRssMiB: number }): void => {
        process.stdout.write(`${row(label, sizeMiB, value.seconds, value.maxRssMiB)}\n`);
      };
      process.stdout.write(`ci-runner (node ${process.version}; an idle worker peaks at ${idleRss.toFixed(0)} MiB RSS):\n`);
      print('upload (select + tar.gz + E7)', figure('upload'));
      print('download (E8 + validate + extract)', figure('download'));
      process.stdout.write('baseline:\n');
      print('tar czf', figure('tar czf'));
      print('curl -F (E7)', figure('curl -F'));
      print('upload total (tar czf + curl)', sum('tar czf', 'curl -F'));
      print('curl GET (E8)', figure('curl GET'));
      print('tar xzf', figure('tar xzf'));
      print('download total (curl + tar xzf)', sum('curl GET', 'tar xzf'));
      process.stdout.write(`ratio ci-runner / baseline: upload ${(figure('upload').seconds / sum('tar czf', 'curl -F').seconds).toFixed(2)}x, download ${(figure('download').seconds / sum('curl GET', 'tar xzf').seconds).toFixed(2)}x\n`);
      process.stdout.write(`trace lines (last round):\n${lines.map((line) => `  | ${line}`).join('\n')}\n`);
    } finally {
      await client.close();
      await server.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
