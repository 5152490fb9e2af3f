/**
 * guardCheckout on checkouts a job has had: what it keeps (objects, refs, the index), what it rewrites
 * or removes (config, hooks, info, alternates) and when it throws the checkout away (a link or a
 * special file under .git, a .git that is not a directory).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { guardCheckout, repositoryConfig } from '../../src/git/checkout-guard.js';
import { createGitRepo, git } from '../helpers/git.js';

/** A clone of a one-commit repository, with what a job might have added to its .git. */
async function checkout(): Promise<{ dir: string; sha: string }> {
  const source = await createGitRepo({ 'a.txt': 'a\n' });
  const dir = join(await mkdtemp(join(tmpdir(), 'ci-runner-guard-')), 'project');
  onTestFinished(() => Promise.all([rm(source, { recursive: true, force: true }), rm(join(dir, '..'), { recursive: true, force: true })]).then(() => undefined));
  await git(join(dir, '..'), ['clone', '-q', source, dir]);
  return { dir, sha: await git(dir, ['rev-parse', 'HEAD']) };
}

describe('guardCheckout', () => {
  it('keeps the repository, rewrites every git dir\'s config and removes hooks, info, alternates and locks', async () => {
    const { dir, sha } = await checkout();
    const module = join(dir, '.git', 'modules', 'lib');
    await git(join(dir, '..'), ['init', '-q', '--bare', module]);
    await writeFile(join(dir, '.git', 'config'), '[core]\n\tfsmonitor = /bin/evil\n[include]\n\tpath = /tmp/evil\n', { flag: 'a' });
    await writeFile(join(module, 'config'), '[core]\n\tworktree = /\n', { flag: 'a' });
    await mkdir(join(dir, '.git', 'hooks'), { recursive: true });
    await writeFile(join(dir, '.git', 'hooks', 'post-checkout'), '#!/bin/sh\n');
    await writeFile(join(dir, '.git', 'objects', 'info', 'alternates'), '/elsewhere/objects\n');
    await writeFile(join(dir, '.git', 'index.lock'), '');
    await writeFile(join(dir, '.git', 'commondir'), '/elsewhere\n');

    expect(await guardCheckout(dir, { originUrl: 'http://ci.example/g/p.git', sha })).toEqual({ state: 'reused' });
    expect(await readFile(join(dir, '.git', 'config'), 'utf8')).toBe(repositoryConfig('sha1', 'http://ci.example/g/p.git'));
    expect(await readFile(join(module, 'config'), 'utf8')).toBe(repositoryConfig('sha1', undefined));
    const left = await readdir(join(dir, '.git'));
    for (const gone of ['hooks', 'info', 'index.lock', 'commondir']) expect(left).not.toContain(gone);
    expect(await readdir(join(dir, '.git', 'objects', 'info'))).not.toContain('alternates');
    expect(await git(dir, ['rev-parse', 'HEAD'])).toBe(sha);
    expect(await git(dir, ['status', '--porcelain'])).toBe('');
  });

  it.each([
    ['a symlink under .git', (dir: string) => symlink('/etc', join(dir, '.git', 'refs', 'remotes', 'origin', 'evil')), '.git/refs/remotes/origin/evil was a symlink'],
    ['a FIFO under .git', (dir: string) => promisify(execFile)('mkfifo', [join(dir, '.git', 'packed-refs.fifo')]).then(() => undefined), '.git/packed-refs.fifo was a special file'],
    ['a .git file naming another repository', async (dir: string) => {
      await rm(join(dir, '.git'), { recursive: true });
      await writeFile(join(dir, '.git'), 'gitdir: /etc/.git\n');
    }, '.git was a file'],
  ])('empties the checkout for %s', async (_what, tamper, reason) => {
    const { dir, sha } = await checkout();
    await tamper(dir);
    expect(await guardCheckout(dir, { originUrl: 'http://ci.example/g/p.git', sha })).toEqual({ state: 'empty', discarded: reason });
    expect(await readdir(dir)).toEqual([]);
  });

  it('writes a URL git config would misread in quotes, and git reads it back as it was', async () => {
    const { dir } = await checkout();
    const url = 'http://ci.example/g/p;x#y "z" \\w.git';
    await writeFile(join(dir, 'c'), repositoryConfig('sha256', url));
    expect(await git(dir, ['config', '-f', 'c', 'remote.origin.url'])).toBe(url);
    expect(await git(dir, ['config', '-f', 'c', 'extensions.objectformat'])).toBe('sha256');
  });
});
