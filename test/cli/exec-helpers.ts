/** Real git repositories in temp dirs for the `exec` tests, and a fingerprint of everything git keeps. */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { execa } from 'execa';

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

export async function git(repo: string, args: string[]): Promise<string> {
  const result = await execa('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: repo, env: IDENTITY, stdin: 'ignore' });
  return result.stdout;
}

export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

const created: string[] = [];

/** A temp dir removed by `removeTempDirs`. */
export async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `ci-runner-exec-${name}-`));
  created.push(dir);
  return dir;
}

/** Removes every dir `tempDir` and `makeRepo` made (call in afterAll). */
export async function removeTempDirs(): Promise<void> {
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** A new repository on branch `main` with `files` committed. */
export async function makeRepo(files: Record<string, string>): Promise<string> {
  const repo = await tempDir('repo');
  await git(repo, ['init', '-q', '-b', 'main']);
  await writeFiles(repo, files);
  await git(repo, ['add', '-A']);
  await git(repo, ['commit', '-q', '-m', 'initial']);
  return repo;
}

/** Every file under `dir` (relative paths, sorted), `.git` left out unless asked for. */
export async function listFiles(dir: string, options: { withGit?: boolean } = {}): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .filter((path) => options.withGit === true || !path.split('/').includes('.git'))
    .sort();
}

async function sha(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path).catch(() => Buffer.alloc(0))).digest('hex');
}

/**
 * What must not change when exec runs: the index's bytes, every ref, the stash, HEAD's reflog, the
 * list of files in `.git` (objects included) and of the working tree, and `git status`.
 */
export async function repoFingerprint(repo: string): Promise<Record<string, unknown>> {
  const gitDir = join(repo, '.git');
  return {
    index: await sha(join(gitDir, 'index')),
    refs: await git(repo, ['for-each-ref', '--format=%(refname) %(objectname)']),
    stash: await git(repo, ['stash', 'list']),
    reflog: await readFile(join(gitDir, 'logs', 'HEAD'), 'utf8').catch(() => ''),
    gitFiles: await listFiles(gitDir, { withGit: true }),
    tree: await listFiles(repo),
    status: await execa('git', ['status', '--porcelain', '--untracked-files=all', '--ignored'], { cwd: repo, env: { GIT_OPTIONAL_LOCKS: '0' } }).then((r) => r.stdout),
  };
}
