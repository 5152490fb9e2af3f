/**
 * Artifacts upload and download through the reference server, next to `tar czf` + `curl` doing the
 * same on the same machine. Data: BENCH_ARTIFACTS_MB (default 200) MB of mixed files — many small
 * text-like files (~40 % of the bytes) and a few large binary ones. Each side runs in its own
 * process so peak RSS is the runner side's alone (the server stays in this process). Figures are
 * printed, never asserted.
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

      await server.createPipeline({ project: 'bench/project', config: 'stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [data/] }\nuse:\n  stage: test\n  script: [x]\n' });
      const make = await next();
      const idle = await runWorker({ stage: 'idle', url: server.url, build: make, projectDir: project, stateDir: scratch }, scratch);
      const up = await runWorker({ stage: 'upload', url: server.url, build: make, projectDir: project, stateDir: scratch }, scratch);
      await client.updateBuild(make.id, runnerToken, { state: 'success', trace: '' });
      const use = await next();
      const into = join(scratch, 'extracted');
      await mkdir(into);
      const down = await runWorker({ stage: 'download', url: server.url, build: use, projectDir: into, stateDir: scratch }, scratch);
      await client.updateBuild(use.id, runnerToken, { state: 'success', trace: '' });

      await server.createPipeline({ project: 'bench/project', config: 'base:\n  script: [x]\n' });
      const base = await next();
      const api = `${server.url}/ci/api/v1/builds`;
      const tarCreate = await timed(`tar czf ${scratch}/baseline.tar.gz data`, project);
      const curlUp = await timed(`curl -sf -o /dev/null -H 'BUILD-TOKEN: ${base.token}' -F file=@${scratch}/baseline.tar.gz '${api}/${base.id}/artifacts'`, scratch);
      await rm(join(scratch, 'baseline.tar.gz'));
      const curlDown = await timed(`curl -sf -o ${scratch}/baseline-down.tar.gz -H 'BUILD-TOKEN: ${make.token}' '${api}/${make.id}/artifacts'`, scratch);
      await mkdir(join(scratch, 'baseline-extract'));
      const tarExtract = await timed(`tar xzf ${scratch}/baseline-down.tar.gz -C ${scratch}/baseline-extract`, scratch);
      await client.updateBuild(base.id, runnerToken, { state: 'success', trace: '' });

      process.stdout.write(`ci-runner (node ${process.version}; idle worker peak RSS ${idle.maxRssMiB.toFixed(0)} MiB):\n`);
      process.stdout.write(`${row('upload (select + tar.gz + E7)', sizeMiB, up.seconds, up.maxRssMiB)}\n`);
      process.stdout.write(`${row('download (E8 + validate + extract)', sizeMiB, down.seconds, down.maxRssMiB)}\n`);
      process.stdout.write('baseline:\n');
      process.stdout.write(`${row('tar czf', sizeMiB, tarCreate.seconds, tarCreate.maxRssMiB)}\n`);
      process.stdout.write(`${row('curl -F (E7)', sizeMiB, curlUp.seconds, curlUp.maxRssMiB)}\n`);
      process.stdout.write(`${row('upload total (tar czf + curl)', sizeMiB, tarCreate.seconds + curlUp.seconds, Math.max(tarCreate.maxRssMiB, curlUp.maxRssMiB))}\n`);
      process.stdout.write(`${row('curl GET (E8)', sizeMiB, curlDown.seconds, curlDown.maxRssMiB)}\n`);
      process.stdout.write(`${row('tar xzf', sizeMiB, tarExtract.seconds, tarExtract.maxRssMiB)}\n`);
      process.stdout.write(`${row('download total (curl + tar xzf)', sizeMiB, curlDown.seconds + tarExtract.seconds, Math.max(curlDown.maxRssMiB, tarExtract.maxRssMiB))}\n`);
      process.stdout.write(`ratio ci-runner / baseline: upload ${(up.seconds / (tarCreate.seconds + curlUp.seconds)).toFixed(2)}x, download ${(down.seconds / (curlDown.seconds + tarExtract.seconds)).toFixed(2)}x\n`);
      process.stdout.write(`trace lines:\n${[...up.lines, ...down.lines].map((line) => `  | ${line}`).join('\n')}\n`);
    } finally {
      await client.close();
      await server.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
