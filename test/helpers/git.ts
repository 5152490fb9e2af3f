/** Real git repositories for tests. */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Test Author',
  GIT_AUTHOR_EMAIL: 'author@example.com',
  GIT_COMMITTER_NAME: 'Test Author',
  GIT_COMMITTER_EMAIL: 'author@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** Runs git in `cwd` with a fixed identity; returns stdout. */
export async function git(cwd: string, args: string[]): Promise<string> {
  const result = await execa('git', args, { cwd, env: GIT_ENV, stdin: 'ignore' });
  return result.stdout.trim();
}

/** Creates a temp repository with one commit of `files` on branch `main`; returns its path. */
export async function createGitRepo(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-repo-'));
  await git(dir, ['init', '-q', '-b', 'main']);
  const entries = Object.entries(files);
  if (entries.length === 0) entries.push(['README.md', '# test project\n']);
  for (const [name, content] of entries) {
    const path = join(dir, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
  await git(dir, ['add', '-A']);
  await git(dir, ['commit', '-q', '-m', 'initial commit']);
  return dir;
}
