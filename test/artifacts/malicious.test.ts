import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactsError, extractArchive } from '../../src/artifacts/index.js';
import { rawTar, rawTarGz, rawZip, removeTempDirs, tempDir, treeOf } from './fixtures.js';

let base: string;
let project: string;
let outside: string;
const signal = new AbortController().signal;

beforeEach(async () => {
  base = await tempDir();
  project = join(base, 'project');
  outside = join(base, 'outside');
  await mkdir(project);
  await mkdir(outside);
  await writeFile(join(outside, 'secret'), 'do not touch');
});
afterEach(removeTempDirs);

async function extract(bytes: Buffer, name = 'archive'): Promise<unknown> {
  const file = join(base, name);
  await writeFile(file, bytes);
  return extractArchive(file, project, signal);
}

async function expectRefused(bytes: Buffer, pattern: RegExp): Promise<void> {
  const before = await treeOf(project);
  const error = await extract(bytes).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ArtifactsError);
  expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
  expect((error as Error).message).toMatch(pattern);
  // The refusal comes from the validation pass: not even the harmless first entry was written.
  expect(existsSync(join(project, 'first.txt'))).toBe(false);
  expect(await treeOf(project)).toEqual(before);
  expect(await readFile(join(outside, 'secret'), 'utf8')).toBe('do not touch');
}

const first = { name: 'first.txt', type: '0', content: 'harmless' };

describe('tar archives from a hostile server', () => {
  it('refuses a ../ entry before writing anything', async () => {
    await expectRefused(rawTarGz([first, { name: '../outside/secret', type: '0', content: 'pwned' }]), /"\.\." component/);
    expect(existsSync(join(base, 'x'))).toBe(false);
  });

  it('refuses an absolute entry name', async () => {
    await expectRefused(rawTarGz([first, { name: `${outside}/abs.txt`, type: '0', content: 'pwned' }]), /absolute name/);
    expect(existsSync(join(outside, 'abs.txt'))).toBe(false);
  });

  it('refuses a symlink to / and the file written through it', async () => {
    await expectRefused(rawTarGz([first, { name: 'root', type: '2', linkname: '/' }, { name: 'root/tmp/pwned', type: '0', content: 'x' }]), /symlink to the absolute path \//);
  });

  it('refuses a relative symlink that climbs out of the project dir', async () => {
    await expectRefused(rawTarGz([first, { name: 'sub/up', type: '2', linkname: '../../outside' }, { name: 'sub/up/secret', type: '0', content: 'pwned' }]), /outside the project dir/);
  });

  it('refuses a file written through a symlink that an earlier entry planted and that points out', async () => {
    // The link alone looks harmless to a per-entry name check; only following it shows the escape.
    await expectRefused(rawTarGz([first, { name: 'a', type: '5' }, { name: 'a/b', type: '2', linkname: '..' }, { name: 'a/b/c', type: '2', linkname: '..' }]), /outside the project dir/);
  });

  it('refuses a hard link to /etc/passwd', async () => {
    await expectRefused(rawTarGz([first, { name: 'passwd', type: '1', linkname: '/etc/passwd' }]), /absolute hard link target/);
  });

  it('refuses a hard link that climbs out of the project dir', async () => {
    await expectRefused(rawTarGz([first, { name: 'secret', type: '1', linkname: '../outside/secret' }]), /"\.\." component in its hard link target/);
  });

  it('refuses a hard link through a symlink that points out', async () => {
    await symlink(outside, join(project, 'elsewhere'));
    await expectRefused(rawTarGz([first, { name: 'stolen', type: '1', linkname: 'elsewhere/secret' }]), /outside the project dir/);
  });

  it('refuses character devices, block devices and fifos', async () => {
    await expectRefused(rawTarGz([first, { name: 'null', type: '3' }]), /character device/);
    await expectRefused(rawTarGz([first, { name: 'disk', type: '4' }]), /block device/);
    await expectRefused(rawTarGz([first, { name: 'pipe', type: '6' }]), /fifo/);
  });

  it('refuses to write through a symlink already in the project dir that points out', async () => {
    await symlink(outside, join(project, 'planted'));
    await expectRefused(rawTarGz([first, { name: 'planted/secret', type: '0', content: 'pwned' }]), /through the symlink planted/);
  });

  it("refuses entries that would land in the project's .git directory, directly or through a link", async () => {
    await expectRefused(rawTarGz([first, { name: '.git/hooks/post-checkout', type: '0', content: '#!/bin/sh\nid\n', mode: 0o755 }]), /\.git directory/);
    await expectRefused(rawTarGz([first, { name: 'hooks', type: '2', linkname: '.git/hooks' }, { name: 'hooks/pre-commit', type: '0', content: 'x' }]), /\.git directory/);
  });

  it('replaces a planted symlink by the archived file instead of writing through it', async () => {
    await symlink(join(outside, 'secret'), join(project, 'config'));
    await extract(rawTarGz([{ name: 'config', type: '0', content: 'from the archive' }]));
    expect((await lstat(join(project, 'config'))).isFile()).toBe(true);
    expect(await readFile(join(project, 'config'), 'utf8')).toBe('from the archive');
    expect(await readFile(join(outside, 'secret'), 'utf8')).toBe('do not touch');
  });

  it('replaces a directory standing where the archive has a file, and a file where it has a directory', async () => {
    await mkdir(join(project, 'thing/inner'), { recursive: true });
    await writeFile(join(project, 'thing/inner/old.txt'), 'old');
    await writeFile(join(project, 'place'), 'a file');
    await extract(rawTarGz([{ name: 'thing', type: '0', content: 'now a file' }, { name: 'place', type: '5' }, { name: 'place/new.txt', type: '0', content: 'new' }]));
    expect(await readFile(join(project, 'thing'), 'utf8')).toBe('now a file');
    expect(await readFile(join(project, 'place/new.txt'), 'utf8')).toBe('new');
  });

  it('extracts links that stay inside: a relative symlink, a file through it, and a hard link', async () => {
    await extract(
      rawTarGz([
        { name: 'real/', type: '5' },
        { name: 'alias', type: '2', linkname: 'real' },
        { name: 'alias/data.txt', type: '0', content: 'through the link' },
        { name: 'copy.txt', type: '1', linkname: 'real/data.txt' },
      ]),
    );
    expect(await readlink(join(project, 'alias'))).toBe('real');
    expect(await readFile(join(project, 'real/data.txt'), 'utf8')).toBe('through the link');
    expect((await stat(join(project, 'copy.txt'))).ino).toBe((await stat(join(project, 'real/data.txt'))).ino);
  });

  it('drops setuid and setgid bits but keeps permissions', async () => {
    await extract(rawTarGz([{ name: 'tool', type: '0', content: '#!/bin/sh\n', mode: 0o6755 }, { name: 'plain', type: '0', content: 'x', mode: 0o640 }]));
    expect((await stat(join(project, 'tool'))).mode & 0o7777).toBe(0o755);
    expect((await stat(join(project, 'plain'))).mode & 0o7777).toBe(0o640);
  });

  it('treats an uncompressed tar like a tar.gz', async () => {
    await extract(rawTar([{ name: 'plain.txt', type: '0', content: 'not gzipped' }]));
    expect(await readFile(join(project, 'plain.txt'), 'utf8')).toBe('not gzipped');
  });

  it('reports a damaged archive as ARCHIVE_CORRUPT and writes nothing', async () => {
    const good = rawTarGz([first, { name: 'big.bin', type: '0', content: Buffer.alloc(200_000, 1) }]);
    const error = await extract(good.subarray(0, Math.floor(good.length / 2))).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_CORRUPT');
    expect(existsSync(join(project, 'first.txt'))).toBe(false);
  });

  it('reports bytes that are no archive at all as ARCHIVE_CORRUPT', async () => {
    const error = await extract(Buffer.from('<html>not an archive</html>')).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_CORRUPT');
  });
});

describe('zip archives from a hostile server', () => {
  const firstZip = { name: 'first.txt', content: 'harmless' };

  it('refuses a ../ entry before writing anything', async () => {
    await expectRefused(rawZip([firstZip, { name: '../outside/secret', content: 'pwned' }]), /invalid relative path/);
  });

  it('refuses a backslash ..\\ entry', async () => {
    await expectRefused(rawZip([firstZip, { name: '..\\outside\\secret', content: 'pwned' }]), /invalid relative path/);
  });

  it('refuses an absolute entry name', async () => {
    await expectRefused(rawZip([firstZip, { name: `${outside}/abs.txt`, content: 'pwned' }]), /absolute path/);
    expect(existsSync(join(outside, 'abs.txt'))).toBe(false);
  });

  it('refuses a symlink entry pointing out and the file written through it', async () => {
    await expectRefused(
      rawZip([firstZip, { name: 'out', content: '../outside', unixMode: 0o120777 }, { name: 'out/secret', content: 'pwned' }]),
      /symlink to \.\.\/outside, which leads outside the project dir/,
    );
  });

  it('refuses a symlink entry with an absolute target', async () => {
    await expectRefused(rawZip([firstZip, { name: 'etc', content: '/etc', unixMode: 0o120777 }]), /absolute path \/etc/);
  });

  it('refuses a character device entry', async () => {
    await expectRefused(rawZip([firstZip, { name: 'null', unixMode: 0o020666 }]), /character device/);
  });

  it('extracts an inside symlink entry as a symlink, with modes kept', async () => {
    await extract(rawZip([{ name: 'bin/', unixMode: 0o040755 }, { name: 'bin/run', content: 'echo', unixMode: 0o100755 }, { name: 'run', content: 'bin/run', unixMode: 0o120777 }]));
    expect(await readlink(join(project, 'run'))).toBe('bin/run');
    expect((await stat(join(project, 'bin/run'))).mode & 0o777).toBe(0o755);
  });
});
