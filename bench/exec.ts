/**
 * `npm run bench -- exec`: wall time of `ci-runner exec` (the built CLI, a fresh process each run) for
 * a one-job `echo` pipeline and a 10-job DAG, next to the same work done by hand as a user would
 * without exec: `serve` (with the pipeline), `register`, then `run-once` until every job has run.
 * Both in the same run, on the same machine, so the comparison holds even when the machine is busy.
 * Then, when gitlab-ci-local is installed (GITLAB_CI_LOCAL), exec beside it: a one-job pipeline and
 * every case of the exec corpus (exec-compare.ts). BENCH_EXEC_BY_HAND=0 leaves the by-hand part out.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { JOB_KEYWORDS } from '../src/pipeline/keywords.js';
import { DAEMON_NODE_FLAGS } from '../src/util/node-flags.js';
import { compareWithGitlabCiLocal } from './exec-compare.js';
import { percentile } from './support.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
/** node's arguments for the CLI as its bin runs it (the shebang's V8 flags first). */
const NODE_CLI = [...DAEMON_NODE_FLAGS, CLI];
const RUNS = Number(process.env.BENCH_EXEC_RUNS ?? 5);
const GIT_ENV = { GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.invalid', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.invalid' };

const ONE_JOB = 'hello:\n  script: echo hello\n';

/** Ten jobs in four stages; with `needs` (when the engine has it) a DAG whose branches start early. */
function tenJobs(withNeeds: boolean): string {
  const jobs: string[] = ['stages: [build, test, package, deploy]'];
  const add = (name: string, stage: string, needs: string[]): void => {
    jobs.push(`${name}:\n  stage: ${stage}\n  script: echo ${name}${withNeeds ? `\n  needs: [${needs.join(', ')}]` : ''}`);
  };
  add('build-a', 'build', []);
  add('build-b', 'build', []);
  for (const n of [1, 2, 3]) add(`test-a${n}`, 'test', ['build-a']);
  add('test-b1', 'test', ['build-b']);
  add('test-b2', 'test', ['build-b']);
  add('package-a', 'package', ['test-a1', 'test-a2', 'test-a3']);
  add('package-b', 'package', ['test-b1', 'test-b2']);
  add('deploy', 'deploy', ['package-a', 'package-b']);
  return `${jobs.join('\n')}\n`;
}

async function repoWith(pipeline: string): Promise<string> {
  const repo = await mkdtemp(join(tmpdir(), 'ci-runner-bench-exec-'));
  const git = (args: string[]) => execa('git', args, { cwd: repo, env: GIT_ENV });
  await git(['init', '-q', '-b', 'main']);
  await writeFile(join(repo, '.gitlab-ci.yml'), pipeline);
  await git(['add', '-A']);
  await git(['commit', '-q', '-m', 'bench']);
  return repo;
}

/** Wall time of one `exec`, and the job durations its summary table shows (server start to finish). */
async function timeExec(repo: string, state: string, concurrent: number, jobTimes?: number[]): Promise<number> {
  const started = performance.now();
  const result = await execa('node', [...NODE_CLI, 'exec', '--concurrent', String(concurrent)], { cwd: repo, env: { XDG_STATE_HOME: state }, reject: false });
  const ms = performance.now() - started;
  if (result.exitCode !== 0) throw new Error(`exec failed (${String(result.exitCode)}): ${result.stderr}${result.stdout.slice(-2000)}`);
  for (const match of result.stdout.matchAll(/\ssuccess\s+(\d+\.\d) s$/gm)) jobTimes?.push(Number(match[1]) * 1000);
  return ms;
}

/** serve + register + run-once per job, as the README's by-hand steps; the serve process is ours to stop. */
async function timeByHand(repo: string, jobs: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-bench-hand-'));
  const started = performance.now();
  const serve = execa('node', [...NODE_CLI, 'serve', '--port', '0', '--project', `bench/app=${repo}`, '--pipeline', join(repo, '.gitlab-ci.yml'), '--registration-token', 'benchreg', '--admin-token', 'benchadmin', '--log-level', 'silent'], { reject: false });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let text = '';
      serve.stdout?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /URL:\s+(\S+)/.exec(text);
        if (match?.[1] && text.includes('Runners register')) resolve(match[1]);
      });
      void serve.then((r) => reject(new Error(`serve exited: ${r.stderr}`)));
    });
    const config = join(dir, 'config.toml');
    await execa('node', [...NODE_CLI, 'register', '--non-interactive', '--url', url, '--registration-token', 'benchreg', '--executor', 'shell', '--config', config, '--builds-dir', join(dir, 'builds'), '--cache-dir', join(dir, 'cache')]);
    const token = /token\s*=\s*"([^"]+)"/.exec(await readFile(config, 'utf8'))?.[1];
    if (!token) throw new Error('register wrote no token');
    for (let i = 0; i < jobs; i += 1) {
      await execa('node', [...NODE_CLI, 'run-once', '--url', url, '--token', token, '--builds-dir', join(dir, 'builds'), '--cache-dir', join(dir, 'cache'), '--wait-timeout', '10s', '--poll-interval', '0.2s']);
    }
    return performance.now() - started;
  } finally {
    serve.kill('SIGTERM');
    await serve;
    await rm(dir, { recursive: true, force: true });
  }
}

function figures(label: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(44)} median ${(percentile(sorted, 50) / 1000).toFixed(2)} s   min ${((sorted[0] ?? NaN) / 1000).toFixed(2)} s   max ${((sorted.at(-1) ?? NaN) / 1000).toFixed(2)} s`;
}

export async function run(): Promise<void> {
  if (process.env.BENCH_EXEC_BY_HAND !== '0') await byHand();
  await compareWithGitlabCiLocal(NODE_CLI, RUNS);
}

async function byHand(): Promise<void> {
  const withNeeds = Object.hasOwn(JOB_KEYWORDS, 'needs');
  const state = await mkdtemp(join(tmpdir(), 'ci-runner-bench-state-'));
  const one = await repoWith(ONE_JOB);
  const ten = await repoWith(tenJobs(withNeeds));
  try {
    const samples = { execOne: [] as number[], jobOne: [] as number[], handOne: [] as number[], execTen: [] as number[], handTen: [] as number[] };
    // Warm-up (file cache, git), not counted.
    await timeExec(one, state, 1);
    for (let i = 0; i < RUNS; i += 1) {
      samples.execOne.push(await timeExec(one, state, 1, samples.jobOne));
      samples.handOne.push(await timeByHand(one, 1));
      samples.execTen.push(await timeExec(ten, state, 4));
      samples.handTen.push(await timeByHand(ten, 10));
    }
    const load = (await readFile('/proc/loadavg', 'utf8').catch(() => '?')).split(' ').slice(0, 3).join(' ');
    process.stdout.write(`${RUNS} runs each, interleaved; load average ${load}\n`);
    process.stdout.write(`${figures('exec, one echo job', samples.execOne)}\n`);
    process.stdout.write(`${figures('  of which the job (clone, script, upload)', samples.jobOne)}\n`);
    process.stdout.write(`${figures('serve + register + run-once, one echo job', samples.handOne)}\n`);
    process.stdout.write(`${figures(`exec --concurrent 4, 10 jobs (${withNeeds ? 'needs DAG' : 'stages; no needs in this engine'})`, samples.execTen)}\n`);
    process.stdout.write(`${figures('serve + register + 10 x run-once, 10 jobs', samples.handTen)}\n`);
  } finally {
    await Promise.all([one, ten, state].map((dir) => rm(dir, { recursive: true, force: true })));
  }
}
