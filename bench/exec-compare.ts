/**
 * `exec` beside gitlab-ci-local, measured in the same run (no `run` export: `bench/exec.ts` calls it).
 * gitlab-ci-local is not a dependency: install it outside the repository (`npm i gitlab-ci-local` in
 * a directory of its own) and name its command with GITLAB_CI_LOCAL, or put `gitlab-ci-local` on PATH.
 * Both run the same pipelines in fresh repositories, interleaved, so a busy machine slows both alike:
 * a one-job pipeline several times, and every case of the exec corpus (`../shared/exec-corpus`, or
 * EXEC_CORPUS) once per round (BENCH_CORPUS_RUNS rounds, default 1; 0 leaves the corpus out).
 */
import { mkdtemp, rm } from 'node:fs/promises';
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

interface Tool {
  name: string;
  /** Runs the tool in `repo` with `args`; resolves with the wall time in ms. */
  time(repo: string, args: string[], env: Record<string, string>): Promise<number>;
}

function tool(name: string, command: string[], leading: string[], state: string): Tool {
  return {
    name,
    async time(repo, args, env) {
      const started = performance.now();
      const [file = '', ...rest] = command;
      await execa(file, [...rest, ...leading, ...args], { cwd: repo, env: { XDG_STATE_HOME: state, ...env }, reject: false, stdin: 'ignore' });
      return performance.now() - started;
    },
  };
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
    const one = await oneJobRepo(root, 'hello:\n  script: echo hello\n');
    await ours.time(one, [], {});
    await theirs.time(one, [], {});
    const oneJob = { ours: [] as number[], theirs: [] as number[] };
    for (let i = 0; i < runs; i += 1) {
      oneJob.ours.push(await ours.time(one, [], {}));
      oneJob.theirs.push(await theirs.time(one, [], {}));
    }
    process.stdout.write(`one echo job, ${runs} runs each: exec median ${seconds(median(oneJob.ours))}, gitlab-ci-local median ${seconds(median(oneJob.theirs))}, ratio ${(median(oneJob.ours) / median(oneJob.theirs)).toFixed(2)}\n`);
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
  const walls = { ours: [] as number[], theirs: [] as number[], ratios: [] as number[] };
  const timeCase = async (who: Tool, testCase: CorpusCase, variableFlag: string, round: number): Promise<number> => {
    const repo = await setUpCase(testCase, join(root, `${who.name}-${round}`));
    return who.time(repo, caseArguments(testCase, variableFlag), { PATH: casePath(testCase, repo) });
  };
  for (let round = 0; round < rounds; round += 1) {
    for (const testCase of cases) {
      const mine = await timeCase(ours, testCase, '-v', round);
      const other = await timeCase(theirs, testCase, '--variable', round);
      walls.ours.push(mine);
      walls.theirs.push(other);
      walls.ratios.push(mine / other);
    }
  }
  const load = (await execa('cat', ['/proc/loadavg'], { reject: false })).stdout.split(' ').slice(0, 3).join(' ');
  process.stdout.write(
    `corpus, ${cases.length} cases x ${rounds}: exec median ${seconds(median(walls.ours))}, gitlab-ci-local median ${seconds(median(walls.theirs))}, ` +
      `ratio of medians ${(median(walls.ours) / median(walls.theirs)).toFixed(2)}, median of per-case ratios ${median(walls.ratios).toFixed(2)} (load average ${load})\n`,
  );
}
