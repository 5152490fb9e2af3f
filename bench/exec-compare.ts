/**
 * `exec` beside gitlab-ci-local, measured in the same run (no `run` export: `bench/exec.ts` calls it).
 * gitlab-ci-local is not a dependency: install it outside the repository (`npm i gitlab-ci-local` in
 * a directory of its own) and name its command with GITLAB_CI_LOCAL, or put `gitlab-ci-local` on PATH.
 * Both run the same pipelines in fresh repositories, interleaved, so a busy machine slows both alike:
 * a one-job pipeline several times, and every case of the exec corpus (`../shared/exec-corpus`, or
 * EXEC_CORPUS) once per round (BENCH_CORPUS_RUNS rounds, default 1; 0 leaves the corpus out).
 * BENCH_EXEC_CASES=1 also prints each case's times, slowest ratio first, to find where exec loses.
 *
 * Besides wall time each run's CPU time is printed: user + system of the tool and every process it
 * waited for (this process's children's times, from /proc/self/stat). On a loaded machine wall time
 * mostly measures the load; CPU time does not. gitlab-ci-local must first run the one-job pipeline
 * (exit 0, the job's output printed): a tool that fails at start (gitlab-ci-local 4.74 and later want
 * Node 22: `Set.prototype.union`) would otherwise be timed as if it had run.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { caseArguments, casePath, corpusDir, corpusExists, loadCases, setUpCase, type CorpusCase } from '../test/exec/corpus.js';
import { percentile } from './support.js';

/** How to start gitlab-ci-local: GITLAB_CI_LOCAL (a .js file runs with node), else `gitlab-ci-local` on PATH; undefined when neither is there. */
export async function findGitlabCiLocal(): Promise<string[] | undefined> {
  const named = process.env.GITLAB_CI_LOCAL;
  if (named) return named.endsWith('.js') ? [process.execPath, named] : [named];
  const found = await execa('sh', ['-c', 'command -v gitlab-ci-local'], { reject: false });
  return found.exitCode === 0 && found.stdout.trim() !== '' ? [found.stdout.trim()] : undefined;
}

const median = (samples: number[]): number => percentile([...samples].sort((a, b) => a - b), 50);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** One run: wall and CPU time in ms (CPU NaN where /proc is missing), how it exited, what it printed. */
interface Timed {
  wall: number;
  cpu: number;
  exitCode: number | undefined;
  output: string;
}

interface Tool {
  name: string;
  /** Runs the tool in `repo` with `args`. */
  time(repo: string, args: string[], env: Record<string, string>): Promise<Timed>;
}

/** User + system time of this process's waited-for children so far, in ms (fields 16 and 17 of /proc/self/stat, in clock ticks of 10 ms). */
async function childrenCpu(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8').catch(() => undefined);
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields ? (Number(fields[13]) + Number(fields[14])) * 10 : NaN;
}

function tool(name: string, command: string[], leading: string[], state: string): Tool {
  return {
    name,
    async time(repo, args, env) {
      const [cpuBefore, started] = [await childrenCpu(), performance.now()];
      const [file = '', ...rest] = command;
      const result = await execa(file, [...rest, ...leading, ...args], { cwd: repo, env: { XDG_STATE_HOME: state, ...env }, reject: false, stdin: 'ignore', all: true });
      const wall = performance.now() - started;
      return { wall, cpu: (await childrenCpu()) - cpuBefore, exitCode: result.exitCode, output: result.all ?? '' };
    },
  };
}

/** `exec median …, gitlab-ci-local median …, ratio …` for wall and CPU time. */
function compared(ours: Timed[], theirs: Timed[]): string {
  const line = (what: string, pick: (t: Timed) => number): string => {
    const [a, b] = [median(ours.map(pick)), median(theirs.map(pick))];
    return `${what}: exec median ${seconds(a)}, gitlab-ci-local median ${seconds(b)}, ratio ${(a / b).toFixed(2)}`;
  };
  return `${line('wall', (t) => t.wall)}; ${line('CPU', (t) => t.cpu)}`;
}

/** A repository with one commit on `main` holding `pipeline` as .gitlab-ci.yml. */
async function oneJobRepo(root: string, pipeline: string): Promise<string> {
  const repo = await mkdtemp(join(root, 'one-'));
  const git = (args: string[]) => execa('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: repo, env: { GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.invalid', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.invalid' } });
  await git(['init', '-q', '-b', 'main']);
  await execa('sh', ['-c', `printf '%s' "$1" > .gitlab-ci.yml`, 'sh', pipeline], { cwd: repo });
  await git(['add', '-A']);
  await git(['commit', '-q', '-m', 'bench']);
  return repo;
}

/** Prints ours beside gitlab-ci-local for a one-job pipeline and over the corpus. */
export async function compareWithGitlabCiLocal(nodeCli: readonly string[], runs: number): Promise<void> {
  const gcl = await findGitlabCiLocal();
  if (!gcl) {
    process.stdout.write('gitlab-ci-local: not installed; install it outside the repository and set GITLAB_CI_LOCAL (its command or src/index.js) to compare\n');
    return;
  }
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-gcl-'));
  try {
    const ours = tool('exec', [process.execPath, ...nodeCli], ['exec', '--color=false'], join(root, 'state'));
    const theirs = tool('gitlab-ci-local', gcl, [], join(root, 'state'));
    // A repository per tool: gitlab-ci-local writes .gitlab-ci-local/ into the working tree, which exec would snapshot.
    const pipeline = 'hello:\n  script: echo hello from the job\n';
    const [oursRepo, theirsRepo] = [await oneJobRepo(root, pipeline), await oneJobRepo(root, pipeline)];
    for (const [who, repo] of [[ours, oursRepo], [theirs, theirsRepo]] as const) {
      const first = await who.time(repo, [], {});
      if (first.exitCode !== 0 || !first.output.includes('hello from the job')) {
        const said = first.output.trim().split('\n').slice(-8).map((line) => line.slice(0, 200));
        process.stdout.write(`${who.name} did not run the one-job pipeline (exit ${String(first.exitCode)}); no comparison. It printed, last lines:\n${said.join('\n')}\n`);
        return;
      }
    }
    const oneJob = { ours: [] as Timed[], theirs: [] as Timed[] };
    for (let i = 0; i < runs; i += 1) {
      oneJob.ours.push(await ours.time(oursRepo, [], {}));
      oneJob.theirs.push(await theirs.time(theirsRepo, [], {}));
    }
    process.stdout.write(`one echo job, ${runs} runs each: ${compared(oneJob.ours, oneJob.theirs)}\n`);
    await compareCorpus(root, ours, theirs, Number(process.env.BENCH_CORPUS_RUNS ?? 1));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Every corpus case in a repository of its own per tool, the two tools one after the other per case. */
async function compareCorpus(root: string, ours: Tool, theirs: Tool, rounds: number): Promise<void> {
  if (rounds < 1) return;
  const dir = corpusDir();
  if (!(await corpusExists(dir))) {
    process.stdout.write(`corpus: not found at ${dir} (set EXEC_CORPUS); skipped\n`);
    return;
  }
  const cases = await loadCases(dir);
  const runs = { ours: [] as Timed[], theirs: [] as Timed[], ratios: [] as number[] };
  const perCase: Array<{ name: string; ours: Timed; theirs: Timed }> = [];
  const timeCase = async (who: Tool, testCase: CorpusCase, variableFlag: string, round: number): Promise<Timed> => {
    const repo = await setUpCase(testCase, join(root, `${who.name}-${round}`));
    return who.time(repo, caseArguments(testCase, variableFlag), { PATH: casePath(testCase, repo) });
  };
  for (let round = 0; round < rounds; round += 1) {
    for (const testCase of cases) {
      const mine = await timeCase(ours, testCase, '-v', round);
      const other = await timeCase(theirs, testCase, '--variable', round);
      runs.ours.push(mine);
      runs.theirs.push(other);
      runs.ratios.push(mine.wall / other.wall);
      perCase.push({ name: testCase.name, ours: mine, theirs: other });
    }
  }
  if (process.env.BENCH_EXEC_CASES === '1') {
    for (const { name, ours: mine, theirs: other } of perCase.sort((a, b) => b.ours.wall / b.theirs.wall - a.ours.wall / a.theirs.wall)) {
      process.stdout.write(`  ${name}: exec ${seconds(mine.wall)} (exit ${String(mine.exitCode)}), gitlab-ci-local ${seconds(other.wall)} (exit ${String(other.exitCode)}), ratio ${(mine.wall / other.wall).toFixed(2)}\n`);
    }
  }
  const load = (await execa('cat', ['/proc/loadavg'], { reject: false })).stdout.split(' ').slice(0, 3).join(' ');
  process.stdout.write(
    `corpus, ${cases.length} cases x ${rounds}: ${compared(runs.ours, runs.theirs)}; median of per-case wall ratios ${median(runs.ratios).toFixed(2)} (load average ${load})\n`,
  );
}
