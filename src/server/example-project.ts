/**
 * The example project (`examples/project`) as a real git repository, for the demo and `ci-runner serve`.
 * A repository cannot be committed inside ours, so it is created on demand: files copied, `git init`,
 * one commit with a fixed identity and date (so the same files always give the same commit sha).
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { CiRunnerError } from '../util/errors.js';
import { packageRoot } from '../util/package-root.js';

/** The pipeline file of the example project, relative to its root. */
export const EXAMPLE_PIPELINE_FILE = '.gitlab-ci.yml';

/** Where the example project's files live in the package. */
export function exampleProjectSource(): string {
  return join(packageRoot(), 'examples', 'project');
}

/** git settings for the commit, independent of the user's git config (a fresh machine has no identity). */
const COMMIT_ENV = {
  GIT_AUTHOR_NAME: 'ci-runner',
  GIT_AUTHOR_EMAIL: 'ci-runner@example.invalid',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
  GIT_COMMITTER_NAME: 'ci-runner',
  GIT_COMMITTER_EMAIL: 'ci-runner@example.invalid',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
};

async function git(cwd: string, args: string[], signal?: AbortSignal): Promise<void> {
  const result = await execa('git', ['-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args], {
    cwd,
    env: COMMIT_ENV,
    stdin: 'ignore',
    reject: false,
    ...(signal === undefined ? {} : { cancelSignal: signal }),
  });
  signal?.throwIfAborted();
  if (result.exitCode !== 0) {
    throw new CiRunnerError('EXAMPLE_GIT_FAILED', `git ${args.join(' ')} failed in ${cwd}: ${result.stderr.trim()}; is git installed?`);
  }
}

/**
 * Copies `examples/project` into `targetDir` (created if missing; must be empty) or a new temp dir, makes
 * it a git repository with one commit on `main`, and returns its path and the pipeline YAML text. The
 * caller owns the directory (remove it when done).
 */
export async function materializeExampleProject(
  targetDir?: string,
  signal?: AbortSignal,
): Promise<{ path: string; pipeline: string }> {
  const source = exampleProjectSource();
  if (!existsSync(join(source, EXAMPLE_PIPELINE_FILE))) {
    throw new CiRunnerError('EXAMPLE_MISSING', `the example project is missing from ${source}; reinstall ci-runner`);
  }
  let path: string;
  if (targetDir === undefined) {
    path = await mkdtemp(join(tmpdir(), 'ci-runner-example-'));
  } else {
    path = resolve(targetDir);
    await mkdir(path, { recursive: true });
    if ((await readdir(path)).length > 0) {
      throw new CiRunnerError('EXAMPLE_TARGET_NOT_EMPTY', `${path} is not empty; pick a new or empty directory for the example project`);
    }
  }
  // Only what the example's own .gitignore would keep out is skipped: leftovers of a manual run.
  const leftovers = new Set(['dist', 'release', '.cache', '.git'].map((name) => join(source, name)));
  await cp(source, path, { recursive: true, filter: (from) => !leftovers.has(from) });
  signal?.throwIfAborted();
  await git(path, ['init', '-q', '-b', 'main'], signal);
  await git(path, ['add', '-A'], signal);
  await git(path, ['commit', '-q', '-m', 'Example project for ci-runner'], signal);
  const pipeline = await readFile(join(path, EXAMPLE_PIPELINE_FILE), 'utf8');
  return { path, pipeline };
}
