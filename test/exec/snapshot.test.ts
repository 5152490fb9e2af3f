/**
 * `exec`'s snapshot of a working tree runs nothing the repository's own `.git` names (its filters,
 * fsmonitor, hooks), while reading the files as the repository's settings say (line endings,
 * excludes).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { snapshotWorkingTree } from '../../src/exec/snapshot.js';
import { gitBatch } from '../../src/exec/snapshot-git.js';
import { createGitRepo, git } from '../helpers/git.js';
import { makeTrap } from '../helpers/planted-git.js';

describe('exec snapshot', () => {
  it('runs no filter, fsmonitor or hook the repository config names, and keeps its line endings and excludes', async () => {
    const trap = await makeTrap();
    const repo = await createGitRepo({ '.gitattributes': '*.txt filter=evil\n', 'a.txt': 'committed\n' });
    const out = await mkdtemp(join(tmpdir(), 'ci-runner-snapshot-'));
    onTestFinished(() => Promise.all([rm(repo, { recursive: true, force: true }), rm(out, { recursive: true, force: true })]).then(() => undefined));
    await git(repo, ['config', 'filter.evil.clean', join(trap.dir, 'bin', 'smudge')]);
    await git(repo, ['config', 'core.fsmonitor', join(trap.dir, 'bin', 'fsmonitor')]);
    await git(repo, ['config', 'core.hooksPath', join(trap.dir, 'hooks')]);
    await git(repo, ['config', 'core.autocrlf', 'input']);
    await mkdir(join(repo, '.git', 'info'), { recursive: true });
    await writeFile(join(repo, '.git', 'info', 'exclude'), 'local-only.log\n');
    await writeFile(join(repo, 'a.txt'), 'changed\r\nin the working tree\r\n');
    await writeFile(join(repo, 'local-only.log'), 'excluded\n');

    const snapshot = await snapshotWorkingTree(repo, out);
    expect(snapshot.dirty).toBe(true);
    const show = (path: string) => git(snapshot.repoPath, ['show', `${snapshot.sha}:${path}`]);
    expect(await show('a.txt')).toBe('changed\nin the working tree');
    await expect(show('local-only.log')).rejects.toThrow();
    expect(await trap.ran()).toEqual([]);
  });

  it('runs no signature program the repository config names when HEAD is signed and log.showSignature is on', async () => {
    const trap = await makeTrap();
    const repo = await createGitRepo({ 'a.txt': 'committed\n' });
    const out = await mkdtemp(join(tmpdir(), 'ci-runner-snapshot-'));
    onTestFinished(() => Promise.all([rm(repo, { recursive: true, force: true }), rm(out, { recursive: true, force: true })]).then(() => undefined));
    // A signed HEAD: the signature need not be valid, git hands whatever is there to the program.
    const tree = await git(repo, ['rev-parse', 'HEAD^{tree}']);
    const signed = await signedCommit(repo, tree);
    await git(repo, ['update-ref', 'refs/heads/main', signed]);
    for (const key of ['gpg.program', 'gpg.openpgp.program', 'gpg.x509.program', 'gpg.ssh.program']) await git(repo, ['config', key, join(trap.dir, 'bin', 'gpg')]);
    await git(repo, ['config', 'log.showSignature', 'true']);

    const snapshot = await snapshotWorkingTree(repo, out);
    expect(snapshot).toMatchObject({ dirty: false, sha: signed, message: 'signed' });
    expect(await trap.ran()).toEqual([]);
  });

  it('takes a clean tree as HEAD itself, with its message and first parent', async () => {
    const { repo, out } = await scratch({ 'a.txt': 'one\n' });
    const first = await git(repo, ['rev-parse', 'HEAD']);
    await writeFile(join(repo, 'a.txt'), 'two\n');
    await git(repo, ['commit', '-q', '-am', 'second\n\nwith a body']);
    const snapshot = await snapshotWorkingTree(repo, out);
    expect(snapshot).toMatchObject({ dirty: false, sha: await git(repo, ['rev-parse', 'HEAD']), beforeSha: first, message: 'second\n\nwith a body', ref: 'main', tag: false });
    expect(snapshot.detachedAs).toBeUndefined();
  });

  it('commits a repository without commits as a root commit, before it 40 zeros', async () => {
    const { repo, out } = await scratch({});
    await git(repo, ['update-ref', '-d', 'HEAD']);
    await writeFile(join(repo, 'new.txt'), 'untracked\n');
    const snapshot = await snapshotWorkingTree(repo, out);
    expect(snapshot).toMatchObject({ dirty: true, head: undefined, beforeSha: '0'.repeat(40), message: 'ci-runner exec: working tree' });
    expect(await git(snapshot.repoPath, ['show', `${snapshot.sha}:new.txt`])).toBe('untracked');
  });

  it('runs a detached HEAD as branch main, saying so', async () => {
    const { repo, out } = await scratch({ 'a.txt': 'one\n' });
    await git(repo, ['checkout', '-q', '--detach']);
    const snapshot = await snapshotWorkingTree(repo, out);
    expect(snapshot).toMatchObject({ dirty: false, ref: 'main', detachedAs: 'main' });
    expect(await git(snapshot.repoPath, ['rev-parse', 'refs/heads/main'])).toBe(snapshot.sha);
  });

  it('refuses a --ref that is not a branch name, and takes refs/tags/NAME as a tag', async () => {
    const { repo, out } = await scratch({ 'a.txt': 'one\n' });
    await expect(snapshotWorkingTree(repo, out, { ref: 'bad..name' })).rejects.toThrow('--ref bad..name: not a valid branch name');
    const tagged = await snapshotWorkingTree(repo, join(out, 'tag'), { ref: 'refs/tags/v1.0' });
    expect(tagged).toMatchObject({ ref: 'v1.0', tag: true });
    expect(await git(tagged.repoPath, ['rev-parse', 'refs/tags/v1.0'])).toBe(tagged.sha);
  });

  it("says a directory is not a git working tree in git's own words", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-not-git-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    await expect(snapshotWorkingTree(dir, join(dir, 'out'))).rejects.toThrow(/is not in a git working tree \(git: fatal: not a git repository/);
  });
});

describe('git batch', () => {
  it("keeps each command's output apart, byte for byte (NULs, no final newline), with its status", async () => {
    const repo = await createGitRepo({ 'a.txt': 'one\n' });
    onTestFinished(() => rm(repo, { recursive: true, force: true }));
    await git(repo, ['config', 'core.autocrlf', 'input']);
    const batch = await gitBatch(repo, { setting: ['config', '--local', '--null', '--get-regexp', '^core\\.autocrlf$'], missing: ['rev-parse', '--verify', '--quiet', 'no-such-ref'], skipped: undefined, branch: ['rev-parse', '--abbrev-ref', 'HEAD'] });
    expect(batch.outcomes).toEqual({
      setting: { code: 0, stdout: 'core.autocrlf\ninput\0' },
      missing: { code: 1, stdout: '' },
      branch: { code: 0, stdout: 'main\n' },
    });
  });

  it('stops at the first command that fails when later ones depend on it', async () => {
    const repo = await createGitRepo({ 'a.txt': 'one\n' });
    onTestFinished(() => rm(repo, { recursive: true, force: true }));
    const batch = await gitBatch(repo, { first: ['rev-parse', '--verify', 'no-such-ref'], second: ['rev-parse', 'HEAD'] }, { stopAtFailure: true });
    expect(batch.outcomes).toEqual({ first: { code: 128, stdout: '' } });
    expect(batch.stderr).toContain('fatal: Needed a single revision');
  });
});

/** A repository with one commit of `files` on main, and an empty directory for the snapshot; both removed after the test. */
async function scratch(files: Record<string, string>): Promise<{ repo: string; out: string }> {
  const repo = await createGitRepo(files);
  const out = await mkdtemp(join(tmpdir(), 'ci-runner-snapshot-'));
  onTestFinished(() => Promise.all([rm(repo, { recursive: true, force: true }), rm(out, { recursive: true, force: true })]).then(() => undefined));
  return { repo, out };
}

/** A commit of `tree` with a (bogus) OpenPGP signature header, written straight into the object store. */
async function signedCommit(repo: string, tree: string): Promise<string> {
  const who = 'Test Author <author@example.com> 1700000000 +0000';
  const signature = ['-----BEGIN PGP SIGNATURE-----', '', 'iQEzBAABCAAdFiEE', '-----END PGP SIGNATURE-----'].join('\n ');
  const body = `tree ${tree}\nauthor ${who}\ncommitter ${who}\ngpgsig ${signature}\n\nsigned\n`;
  const file = join(repo, '.git', 'signed-commit');
  await writeFile(file, body);
  return git(repo, ['hash-object', '-t', 'commit', '-w', file]);
}
