import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, stat, symlink, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { createArchive, detectFormat, extractArchive, selectFiles } from '../../src/artifacts/index.js';
import { removeTempDirs, tempDir, writeFiles } from './fixtures.js';

const signal = new AbortController().signal;
afterEach(removeTempDirs);

/** path → 'dir' | 'link:<target>' | 'file:<mode>:<sha of content>' for every entry under `dir`. */
async function describeTree(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const name of (await readdir(dir, { recursive: true })).sort()) {
    const path = join(dir, name);
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) tree[name] = `link:${await readlink(path)}`;
    else if (stats.isDirectory()) tree[name] = 'dir';
    else tree[name] = `file:${(stats.mode & 0o777).toString(8)}:${(await readFile(path)).toString('base64').slice(0, 40)}:${stats.size}`;
  }
  return tree;
}

async function sampleProject(): Promise<string> {
  const project = await tempDir();
  await writeFiles(project, {
    'build/app.js': 'console.log(1)\n',
    'build/nested/deep/data.bin': randomBytes(300_000),
    'build/@starts-with-at': 'tar.c would read this name as an archive to splice in',
    'build/-dash': 'leading dash',
    'build/ünïcödé name.txt': 'unicode',
    'build/run.sh': '#!/bin/sh\necho hi\n',
    'build/empty.flag': '',
  });
  await chmod(join(project, 'build/run.sh'), 0o755);
  await chmod(join(project, 'build/empty.flag'), 0o640);
  await mkdir(join(project, 'build/empty'));
  await symlink('app.js', join(project, 'build/current'));
  return project;
}

describe.each(['tar.gz', 'zip'] as const)('%s round trip', (format) => {
  it('restores files, empty directories, symlinks, modes and odd names exactly', async () => {
    const project = await sampleProject();
    const selection = await selectFiles(project, { paths: ['build'] }, () => undefined, signal);
    const archive = join(await tempDir(), `artifacts.${format}`);
    await createArchive(project, selection.entries, archive, format, signal);
    expect(await detectFormat(archive)).toBe(format);

    const target = await tempDir();
    const summary = await extractArchive(archive, target, signal);
    expect(summary.format).toBe(format);
    expect(await describeTree(target)).toEqual(await describeTree(project));
    expect(await readlink(join(target, 'build/current'))).toBe('app.js');
  });

  it('replaces existing files and creates missing parents', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'out/a.txt': 'new', 'out/deeper/b.txt': 'b', 'out/now-empty': '' });
    const selection = await selectFiles(project, { paths: ['out/a.txt', 'out/deeper/b.txt', 'out/now-empty'] }, () => undefined, signal);
    const archive = join(await tempDir(), `artifacts.${format}`);
    await createArchive(project, selection.entries, archive, format, signal);

    const target = await tempDir();
    await writeFiles(target, { 'out/a.txt': 'old and longer content', 'out/now-empty': 'had content before' });
    await chmod(join(target, 'out/a.txt'), 0o400);
    await extractArchive(archive, target, signal);
    expect(await readFile(join(target, 'out/a.txt'), 'utf8')).toBe('new');
    expect(await readFile(join(target, 'out/deeper/b.txt'), 'utf8')).toBe('b');
    expect(await readFile(join(target, 'out/now-empty'), 'utf8')).toBe('');
  });
});

describe('archives made by other tools', () => {
  it("extracts a zip made by Debian's zip CLI, symlinks included", async () => {
    const source = await tempDir();
    await writeFiles(source, { 'dist/index.html': '<h1>hi</h1>', 'dist/js/app.js': 'x()' });
    await chmod(join(source, 'dist/js/app.js'), 0o750);
    await symlink('index.html', join(source, 'dist/home.html'));
    const archive = join(await tempDir(), 'legacy.zip');
    await execa('zip', ['-q', '-r', '--symlinks', archive, 'dist'], { cwd: source });

    const target = await tempDir();
    await extractArchive(archive, target, signal);
    expect(await readFile(join(target, 'dist/index.html'), 'utf8')).toBe('<h1>hi</h1>');
    expect(await readFile(join(target, 'dist/js/app.js'), 'utf8')).toBe('x()');
    expect((await stat(join(target, 'dist/js/app.js'))).mode & 0o777).toBe(0o750);
    expect(await readlink(join(target, 'dist/home.html'))).toBe('index.html');
  });

  it('extracts a tar.gz made by GNU tar', async () => {
    const source = await tempDir();
    await writeFiles(source, { 'cov/index.html': 'coverage', 'cov/a/b/c.json': '{}' });
    const archive = join(await tempDir(), 'gnu.tar.gz');
    await execa('tar', ['czf', archive, 'cov'], { cwd: source });

    const target = await tempDir();
    await extractArchive(archive, target, signal);
    expect(await describeTree(target)).toEqual(await describeTree(source));
  });

  it('accepts an empty zip (only the end record) and writes nothing', async () => {
    const archive = join(await tempDir(), 'empty.zip');
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    await writeFile(archive, end);
    const target = await tempDir();
    expect(await detectFormat(archive)).toBe('zip');
    expect((await extractArchive(archive, target, signal)).entries).toBe(0);
    expect(await readdir(target)).toEqual([]);
  });
});

describe('aborting', () => {
  it('stops an extraction when the job is canceled, rejecting with the reason', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'big/a.bin': randomBytes(8_000_000), 'big/b.bin': randomBytes(8_000_000) });
    const selection = await selectFiles(project, { paths: ['big'] }, () => undefined, signal);
    const archive = join(await tempDir(), 'big.tar.gz');
    await createArchive(project, selection.entries, archive, 'tar.gz', signal);

    const controller = new AbortController();
    const extraction = extractArchive(archive, await tempDir(), controller.signal).catch((caught: unknown) => caught);
    setImmediate(() => controller.abort(new Error('job canceled')));
    expect(((await extraction) as Error).message).toBe('job canceled');
  });
});
