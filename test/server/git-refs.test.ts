import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultBranch, previousSha, resolveRef, ZERO_SHA } from '../../src/server/git/refs.js';
import { hasCode } from '../../src/util/errors.js';

const identity = ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', '-c', 'tag.gpgsign=false'];

describe('resolveRef and previousSha', () => {
  let repo: string;
  let first: string;
  let second: string;
  let side: string;

  const git = async (...args: string[]): Promise<string> => (await execa('git', ['-C', repo, ...identity, ...args])).stdout.trim();

  beforeAll(async () => {
    repo = await mkdtemp(join(tmpdir(), 'ci-runner-refs-'));
    await git('init', '-q', '-b', 'main');
    await writeFile(join(repo, 'a.txt'), 'one\n');
    await git('add', 'a.txt');
    await git('commit', '-q', '-m', 'first');
    first = await git('rev-parse', 'HEAD');
    await git('tag', '-a', 'v1.0', '-m', 'release');
    await writeFile(join(repo, 'a.txt'), 'two\n');
    await git('commit', '-q', '-am', 'second');
    second = await git('rev-parse', 'HEAD');
    await git('checkout', '-q', '-b', 'feature/x', first);
    await writeFile(join(repo, 'b.txt'), 'side\n');
    await git('add', 'b.txt');
    await git('commit', '-q', '-m', 'side');
    side = await git('rev-parse', 'HEAD');
    // A lightweight tag with the same name as a branch: the branch must win.
    await git('tag', 'main', first);
    await git('checkout', '-q', 'main');
  });

  afterAll(async () => {
    await rm(repo, { recursive: true, force: true });
  });

  it('resolves a branch to its head commit, not a tag of the same name', async () => {
    await expect(resolveRef(repo, 'main')).resolves.toEqual({ sha: second, tag: false });
    await expect(resolveRef(repo, 'feature/x')).resolves.toEqual({ sha: side, tag: false });
    await expect(resolveRef(repo, 'refs/heads/main')).resolves.toEqual({ sha: second, tag: false });
  });

  it('resolves an annotated tag to the commit it points at and marks it a tag', async () => {
    await expect(resolveRef(repo, 'v1.0')).resolves.toEqual({ sha: first, tag: true });
    await expect(resolveRef(repo, 'refs/tags/main')).resolves.toEqual({ sha: first, tag: true });
  });

  it('resolves a full commit sha', async () => {
    await expect(resolveRef(repo, side)).resolves.toEqual({ sha: side, tag: false });
  });

  it.each(['nope', '', '--all', '0'.repeat(40), 'main..feature/x', 'HEAD~1'])(
    'refuses %j with REF_NOT_FOUND',
    async (ref) => {
      const error: unknown = await resolveRef(repo, ref).catch((caught: unknown) => caught);
      expect(hasCode(error, 'REF_NOT_FOUND')).toBe(true);
      expect((error as Error).message).toContain(`'${ref}'`);
    },
  );

  it('refuses an abbreviated sha: the payload needs the full one', async () => {
    const error: unknown = await resolveRef(repo, second.slice(0, 12)).catch((caught: unknown) => caught);
    expect(hasCode(error, 'REF_NOT_FOUND')).toBe(true);
  });

  it('gives the first parent as the previous commit, and zeros for a root commit', async () => {
    await expect(previousSha(repo, second)).resolves.toBe(first);
    await expect(previousSha(repo, side)).resolves.toBe(first);
    await expect(previousSha(repo, first)).resolves.toBe(ZERO_SHA);
  });

  it('refuses a previous commit for a sha that is not in the repository', async () => {
    const error: unknown = await previousSha(repo, 'f'.repeat(40)).catch((caught: unknown) => caught);
    expect(hasCode(error, 'REF_NOT_FOUND')).toBe(true);
  });

  it('names the branch HEAD points at', async () => {
    await expect(defaultBranch(repo)).resolves.toBe('main');
  });

  it('stops when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(resolveRef(repo, 'main', controller.signal)).rejects.toThrow();
  });
});
