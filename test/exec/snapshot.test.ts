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
});

/** A commit of `tree` with a (bogus) OpenPGP signature header, written straight into the object store. */
async function signedCommit(repo: string, tree: string): Promise<string> {
  const who = 'Test Author <author@example.com> 1700000000 +0000';
  const signature = ['-----BEGIN PGP SIGNATURE-----', '', 'iQEzBAABCAAdFiEE', '-----END PGP SIGNATURE-----'].join('\n ');
  const body = `tree ${tree}\nauthor ${who}\ncommitter ${who}\ngpgsig ${signature}\n\nsigned\n`;
  const file = join(repo, '.git', 'signed-commit');
  await writeFile(file, body);
  return git(repo, ['hash-object', '-t', 'commit', '-w', file]);
}
