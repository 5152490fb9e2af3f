import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { selectFiles } from '../../src/artifacts/index.js';
import { git } from '../helpers/git.js';
import { makeTrap } from '../helpers/planted-git.js';
import { removeTempDirs, tempDir, writeFiles } from './fixtures.js';

const signal = new AbortController().signal;
afterEach(removeTempDirs);

async function select(project: string, spec: { paths?: string[]; untracked?: boolean }): Promise<{ paths: string[]; lines: string[]; kinds: Record<string, string> }> {
  const lines: string[] = [];
  const selection = await selectFiles(project, spec, (line) => lines.push(line), signal);
  return {
    paths: selection.entries.map((entry) => entry.path),
    kinds: Object.fromEntries(selection.entries.map((entry) => [entry.path, entry.kind])),
    lines,
  };
}

describe('selecting artifacts paths', () => {
  it('takes a single file, and a directory with everything below it', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'report.xml': 'r', 'coverage/index.html': 'c', 'coverage/lib/a.html': 'a', 'other.txt': 'o' });
    const { paths } = await select(project, { paths: ['report.xml', 'coverage/'] });
    expect(paths).toEqual(['coverage', 'coverage/index.html', 'coverage/lib', 'coverage/lib/a.html', 'report.xml']);
  });

  it('matches globs, including ** across directories and dotfiles', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'a.log': '1', 'logs/b.log': '2', 'logs/deep/.c.log': '3', 'logs/d.txt': '4', 'reports/x.xml': '5', 'reports/y.json': '6' });
    expect((await select(project, { paths: ['**/*.log'] })).paths).toEqual(['a.log', 'logs/b.log', 'logs/deep/.c.log']);
    expect((await select(project, { paths: ['reports/*.xml'] })).paths).toEqual(['reports/x.xml']);
  });

  it('adds untracked files but not tracked or ignored ones', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'tracked.txt': 't', '.gitignore': 'ignored.txt\n' });
    await git(project, ['init', '-q', '-b', 'main']);
    await git(project, ['add', '-A']);
    await git(project, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'init']);
    await writeFiles(project, { 'new.txt': 'n', 'ignored.txt': 'i', 'fresh/dir/file.bin': 'f' });
    const { paths } = await select(project, { untracked: true });
    expect(paths).toEqual(['fresh/dir/file.bin', 'new.txt']);
  });

  it('lists untracked files without running the fsmonitor a job set in the checkout\'s config, directly or by an include', async () => {
    const trap = await makeTrap();
    const project = await tempDir();
    await writeFiles(project, { 'tracked.txt': 't' });
    await git(project, ['init', '-q', '-b', 'main']);
    await git(project, ['add', '-A']);
    await git(project, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'init']);
    // What the job leaves: a checkout whose .git/config (written as the job pleased) names its programs.
    await git(project, ['config', 'core.fsmonitor', join(trap.dir, 'bin', 'fsmonitor')]);
    await writeFile(join(project, '.git', 'evil.inc'), `[core]\n\tfsmonitor = ${join(trap.dir, 'bin', 'include')}\n`);
    await git(project, ['config', 'include.path', 'evil.inc']);
    await git(project, ['config', 'core.hooksPath', join(trap.dir, 'hooks')]);
    await writeFiles(project, { 'built/out.bin': 'b' });
    const { paths } = await select(project, { untracked: true });
    expect(paths).toEqual(['built/out.bin']);
    expect(await trap.ran()).toEqual([]);
  });

  it('warns when untracked is asked for outside a git repository', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'a.txt': 'a' });
    const { paths, lines } = await select(project, { untracked: true });
    expect(paths).toEqual([]);
    expect(lines.join('\n')).toMatch(/could not list untracked files/);
  });

  it('refuses paths that lead out of the project dir, with a line in the trace', async () => {
    const base = await tempDir();
    const project = join(base, 'project');
    await writeFiles(base, { 'outside/secret.txt': 's', 'project/inside.txt': 'i' });
    await symlink(join(base, 'outside'), join(project, 'linked-out'));
    const { paths, lines } = await select(project, { paths: ['../outside/secret.txt', join(base, 'outside/secret.txt'), 'linked-out/secret.txt', 'inside.txt'] });
    expect(paths).toEqual(['inside.txt']);
    expect(lines.filter((line) => /refusing/.test(line))).toHaveLength(3);
  });

  it('archives symlinks inside the project as symlinks and refuses those pointing out', async () => {
    const base = await tempDir();
    const project = join(base, 'project');
    await writeFiles(base, { 'outside/secret.txt': 's', 'project/dist/real/file.txt': 'f' });
    await symlink('real', join(project, 'dist/alias'));
    await symlink('/etc/passwd', join(project, 'dist/passwd'));
    await symlink('../../outside', join(project, 'dist/escape'));
    const { kinds, lines } = await select(project, { paths: ['dist'] });
    expect(kinds).toEqual({ dist: 'directory', 'dist/alias': 'symlink', 'dist/real': 'directory', 'dist/real/file.txt': 'file' });
    expect(lines.join('\n')).toMatch(/refusing symlink dist\/escape -> \.\.\/\.\.\/outside/);
    expect(lines.join('\n')).toMatch(/refusing symlink dist\/passwd -> \/etc\/passwd/);
  });

  it('leaves out links that stay inside but that extracting would refuse, so the rest of the archive still extracts', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'dist/real/file.txt': 'f', '.git/config': '[core]\n' });
    await symlink(join(project, 'dist/real'), join(project, 'dist/absolute'));
    await symlink('real/../real', join(project, 'dist/detour'));
    await symlink('../.git/config', join(project, 'dist/gitconfig'));
    await symlink('..', join(project, 'dist/up'));
    await symlink('up/.git', join(project, 'dist/git'));
    await symlink('.git', join(project, 'gitdir'));
    await symlink('../gitdir', join(project, 'dist/meta'));
    const { kinds, lines } = await select(project, { paths: ['dist'] });
    expect(kinds).toEqual({ dist: 'directory', 'dist/real': 'directory', 'dist/real/file.txt': 'file', 'dist/up': 'symlink' });
    const log = lines.join('\n');
    expect(log).toMatch(/refusing symlink dist\/absolute -> \S+: its target is an absolute path \(make it relative\); extracting an archive with it would be refused/);
    expect(log).toMatch(/refusing symlink dist\/detour -> real\/\.\.\/real: "\.\." follows a name in it/);
    expect(log).toMatch(/refusing symlink dist\/gitconfig -> \.\.\/\.git\/config: it goes into a \.git directory/);
    expect(log).toMatch(/refusing symlink dist\/git -> up\/\.git: it goes into a \.git directory/);
    expect(log).toMatch(/refusing symlink dist\/meta -> \.\.\/gitdir: it leads into the project's \.git directory/);
  });

  it('says so when a path matches nothing', async () => {
    const project = await tempDir();
    await mkdir(join(project, 'empty'));
    await writeFile(join(project, 'x.txt'), 'x');
    const { paths, lines } = await select(project, { paths: ['missing.txt', 'nothing/**/*.o'] });
    expect(paths).toEqual([]);
    expect(lines).toEqual(['WARNING: missing.txt: no matching files', 'WARNING: nothing/**/*.o: no matching files']);
  });

  it('leaves .git out when the whole project is selected', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'a.txt': 'a', '.git/config': 'x', '.hidden': 'h' });
    expect((await select(project, { paths: ['.'] })).paths).toEqual(['.hidden', 'a.txt']);
    expect((await select(project, { paths: ['**'] })).paths).toEqual(['.hidden', 'a.txt']);
  });
});
