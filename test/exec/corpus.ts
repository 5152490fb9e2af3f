/**
 * The exec corpus (`../shared/exec-corpus` beside the checkout): pipelines taken from gitlab-ci-local's
 * own tests, each with what GitLab does. A case is set up as its README says — the folder copied into
 * a fresh git repository with one commit on branch `master`, an `origin` remote on gitlab.com, `main`
 * as the default branch name — and run with the built CLI (`ci-runner exec [args]`, `-v` for its
 * variables, `_stubs/` first on PATH when it asks). Its expectation (`gitlab` when present, else
 * `expect`) is then checked against the exit code, the job logs exec keeps and its summary table.
 */
import { logText } from '../helpers/log-text.js';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { execa } from 'execa';
import { fileSafe } from '../../src/exec/keep.js';
import { DAEMON_NODE_FLAGS } from '../../src/util/node-flags.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Files of a case folder that describe it rather than belong to its project. */
const META = new Set(['case.json', 'ADAPTED']);
/** A hang guard, twice what the slowest case (9,000 artifacts) took in a loaded CI run; exec is killed (and the case fails) past it. */
export const CASE_TIMEOUT_MS = 90_000;

export type Status = 'success' | 'failed' | 'allowed' | 'manual' | 'skipped' | 'notrun';

export interface Expectation {
  exit?: 'pass' | 'fail' | 'invalid';
  lines?: Array<[string, string]>;
  absent?: string[];
  status?: Record<string, Status>;
}

export interface CorpusCase {
  name: string;
  dir: string;
  args: string[];
  vars: Record<string, string>;
  file?: string;
  stubs: boolean;
  /** `gitlab` when the case has it (GitLab's documented behaviour), else `expect`. */
  expect: Expectation;
}

/** The corpus folder: `EXEC_CORPUS` when set, else `../shared/exec-corpus` from the repository root. */
export function corpusDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.EXEC_CORPUS ? resolve(env.EXEC_CORPUS) : resolve(REPO_ROOT, '..', 'shared', 'exec-corpus');
}

export async function corpusExists(dir: string): Promise<boolean> {
  return stat(join(dir, 'README.md')).then(
    (s) => s.isFile(),
    () => false,
  );
}

/** Every case of the corpus, by folder name. */
export async function loadCases(dir: string): Promise<CorpusCase[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const cases: CorpusCase[] = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const raw = JSON.parse(await readFile(join(dir, entry.name, 'case.json'), 'utf8')) as {
      args?: string[];
      vars?: Record<string, string>;
      file?: string;
      stubs?: boolean;
      expect: Expectation;
      gitlab?: Expectation;
    };
    cases.push({
      name: entry.name,
      dir: join(dir, entry.name),
      args: raw.args ?? [],
      vars: raw.vars ?? {},
      ...(raw.file === undefined ? {} : { file: raw.file }),
      stubs: raw.stubs === true,
      expect: raw.gitlab ?? raw.expect,
    });
  }
  return cases;
}

const GIT_ENV = { GIT_AUTHOR_NAME: 'gcl', GIT_AUTHOR_EMAIL: 'gcl@example.invalid', GIT_COMMITTER_NAME: 'gcl', GIT_COMMITTER_EMAIL: 'gcl@example.invalid' };

/** The case as its own repository under `root`: one commit on `master`, origin on gitlab.com. */
export async function setUpCase(testCase: CorpusCase, root: string): Promise<string> {
  const repo = join(root, testCase.name);
  await mkdir(repo, { recursive: true });
  await cp(testCase.dir, repo, { recursive: true, filter: (source) => !META.has(source.slice(testCase.dir.length + 1)) });
  const git = (args: string[]) => execa('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: repo, env: GIT_ENV, stdin: 'ignore' });
  await git(['init', '-q', '-b', 'master']);
  // `main` as the default branch name, whatever the machine's git says.
  await git(['config', 'init.defaultBranch', 'main']);
  await git(['remote', 'add', 'origin', `git@gitlab.com:gcl/${testCase.name}.git`]);
  await git(['add', '-A']);
  await git(['commit', '-q', '-m', `${testCase.name}`]);
  return repo;
}

/** What follows the command for `testCase`: its variables (with `variableFlag`), its file, its own arguments. */
export function caseArguments(testCase: CorpusCase, variableFlag: string): string[] {
  const variables = Object.entries(testCase.vars).flatMap(([key, value]) => [variableFlag, `${key}=${value}`]);
  return [...variables, ...(testCase.file ? ['--file', testCase.file] : []), ...testCase.args];
}

/** PATH for the case: its `_stubs/` first when it asks for them. */
export function casePath(testCase: CorpusCase, repo: string): string {
  return testCase.stubs ? `${join(repo, '_stubs')}:${process.env.PATH ?? ''}` : (process.env.PATH ?? '');
}

export interface CaseRun {
  exitCode: number | undefined;
  output: string;
  timedOut: boolean;
  /** Each job's log as exec kept it, by job name (ANSI codes taken out, one entry per line). */
  logs: Map<string, string[]>;
  /** The summary table's STATUS by job name. */
  statuses: Map<string, string>;
}

/** Sets the case up under `root` and runs it; `state` is exec's XDG_STATE_HOME. */
export async function runCase(testCase: CorpusCase, root: string, state: string): Promise<CaseRun> {
  const repo = await setUpCase(testCase, root);
  // Variables first, as a user types `exec -v A=1 build`: a name after them is a job.
  const args = ['exec', '--color=false', ...caseArguments(testCase, '-v')];
  const path = casePath(testCase, repo);
  const result = await execa('node', [...DAEMON_NODE_FLAGS, CLI, ...args], {
    cwd: repo,
    env: { XDG_STATE_HOME: state, PATH: path, CI: '' },
    reject: false,
    all: true,
    stdin: 'ignore',
    timeout: CASE_TIMEOUT_MS,
  });
  const output = result.all ?? '';
  const runDir = /^Logs and artifacts: (.+)$/m.exec(output)?.[1];
  return {
    exitCode: result.exitCode,
    output,
    timedOut: result.timedOut,
    logs: runDir === undefined ? new Map() : await readLogs(join(runDir, 'logs')),
    statuses: summaryStatuses(output),
  };
}


/** `logs/<id>-<job>.log` → the job's lines (a retried job's later log wins). */
async function readLogs(dir: string): Promise<Map<string, string[]>> {
  const logs = new Map<string, string[]>();
  const files = (await readdir(dir).catch(() => [] as string[])).sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
  for (const file of files) {
    // The log as GitLab's page reads it: stamps off, a `+` piece on its line.
    const text = stripVTControlCharacters(logText(await readFile(join(dir, file), 'utf8')));
    // A line rewritten in place (`\r`) shows its last form, as in a terminal.
    const lines = text.split('\n').map((line) => (line.split('\r').at(-1) ?? '').trimEnd());
    logs.set(file.replace(/^\d+-/, '').replace(/\.log$/, ''), lines);
  }
  return logs;
}

/** The summary table (`JOB  STAGE  STATUS  DURATION`), read by the header's column positions. */
function summaryStatuses(output: string): Map<string, string> {
  const statuses = new Map<string, string>();
  const lines = output.split('\n');
  const head = lines.findLastIndex((line) => /^JOB\s+STAGE\s+STATUS\s+DURATION$/.test(line));
  if (head < 0) return statuses;
  const header = lines[head] ?? '';
  const [stageAt, statusAt, durationAt] = ['STAGE', 'STATUS', 'DURATION'].map((title) => header.indexOf(title));
  for (const line of lines.slice(head + 1)) {
    if (line.trim() === '' || line.startsWith('Pipeline #')) break;
    statuses.set(line.slice(0, stageAt).trimEnd(), line.slice(statusAt, durationAt).trim());
  }
  return statuses;
}

const EXIT: Record<NonNullable<Expectation['exit']>, number> = { pass: 0, fail: 1, invalid: 2 };

/** What the summary's STATUS means in the corpus's words; undefined when the job is not in the table. */
function corpusStatus(shown: string | undefined): Status | 'other' {
  if (shown === undefined || shown === 'created' || shown === 'skipped' || shown === 'canceled') return shown === 'skipped' ? 'skipped' : 'notrun';
  if (shown === 'failed (allowed)') return 'allowed';
  if (shown === 'success' || shown === 'failed' || shown === 'manual') return shown;
  return 'other';
}

/** Every way `run` misses the case's expectation (empty: the case passes). */
export function judge(testCase: CorpusCase, run: CaseRun): string[] {
  const problems: string[] = [];
  const want = testCase.expect;
  if (run.timedOut) return [`exec did not finish within ${CASE_TIMEOUT_MS / 1000} s`];
  if (want.exit !== undefined && run.exitCode !== EXIT[want.exit]) problems.push(`exit ${String(run.exitCode)}, expected ${EXIT[want.exit]} (${want.exit})`);
  for (const [job, line] of want.lines ?? []) {
    const log = run.logs.get(fileSafe(job));
    if (log === undefined) problems.push(`no log of job '${job}' (expected the line '${line}')`);
    else if (!log.includes(line)) problems.push(`job '${job}' logged no line '${line}'`);
  }
  // What jobs printed: the runner's echo of each command (`$ cmd`, as GitLab's logs have it too) is the
  // script, not its output (`echo x > foo.badlog` is no sign that foo.badlog reached a later job).
  for (const text of want.absent ?? []) {
    for (const [job, log] of run.logs) {
      if (log.some((line) => !line.startsWith('$ ') && line.includes(text))) problems.push(`job '${job}' logged '${text}', which must appear nowhere`);
    }
  }
  for (const [job, status] of Object.entries(want.status ?? {})) {
    const shown = run.statuses.get(job);
    const got = corpusStatus(shown);
    // A job that never ran may also be `skipped` (after a failure) in the table.
    const ok = got === status || (status === 'notrun' && got === 'skipped');
    if (!ok) problems.push(`job '${job}' is ${shown ?? 'not in the pipeline'}, expected ${status}`);
  }
  return problems;
}

/** A temp dir for the cases' repositories and exec's state. */
export async function corpusWorkDir(): Promise<{ root: string; state: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-corpus-'));
  const state = join(root, '.state');
  await mkdir(state);
  return { root, state, remove: () => rm(root, { recursive: true, force: true }) };
}
