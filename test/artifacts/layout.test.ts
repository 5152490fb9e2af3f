/**
 * Archives whose later entries change what earlier paths and links mean: every symlink is judged
 * against the layout the whole archive leaves, every refusal is decided before the first byte is
 * written, and archives that only look odd (links re-pointed inside, a directory replaced by a
 * link, files left by the previous job) still extract.
 */
import { mkdir, readFile, readlink, realpath, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactsError, extractArchive } from '../../src/artifacts/index.js';
import { buildArchive, removeTempDirs, tempDir, treeOf, type LayoutEntry, type TestArchiveFormat } from './fixtures.js';

let base: string;
let project: string;
let outside: string;
const signal = new AbortController().signal;

beforeEach(async () => {
  base = await tempDir();
  project = join(base, 'project');
  outside = join(base, 'outside');
  await mkdir(join(project, 'src'), { recursive: true });
  await writeFile(join(project, 'src/main.c'), 'from the checkout');
  await mkdir(join(project, '.git'));
  await writeFile(join(project, '.git/config'), '[core]\n');
  await mkdir(outside);
  await writeFile(join(outside, 'secret'), 'do not touch');
});
afterEach(removeTempDirs);

async function extract(format: TestArchiveFormat, entries: LayoutEntry[]): Promise<unknown> {
  const file = join(base, `archive.${format}`);
  await writeFile(file, buildArchive(format, entries));
  return extractArchive(file, project, signal);
}

/** Refused by the validation pass: the project dir is exactly as it was, not one entry written. */
async function expectRefused(format: TestArchiveFormat, entries: LayoutEntry[], pattern: RegExp): Promise<void> {
  const before = await treeOf(project);
  const error = await extract(format, [first, ...entries]).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ArtifactsError);
  expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
  expect((error as Error).message).toMatch(/^refusing the whole archive, nothing was extracted: /);
  expect((error as Error).message).toMatch(pattern);
  expect(await treeOf(project)).toEqual(before);
  expect(await treeOf(outside)).toEqual({ secret: 'file:644:do not touch' });
}

const first: LayoutEntry = { name: 'first.txt', file: 'harmless' };

describe.each(['tar.gz', 'tar', 'zip'] as const)('links judged on the layout the whole archive leaves (%s)', (format) => {
  it('refuses a link a later entry re-aims out of the project dir (x/y replaced by a symlink to .)', async () => {
    await expectRefused(
      format,
      [{ name: 'x/', dir: true }, { name: 'x/y/', dir: true }, { name: 'l', symlink: 'x/y/../..' }, { name: 'x/y', symlink: '.' }],
      /"l" is a symlink to x\/y\/\.\.\/\.\.: "\.\." follows a name in it/,
    );
  });

  it('refuses a ".." after a name even where it leads inside for now: a later archive could re-aim it', async () => {
    await expectRefused(format, [{ name: 'x/y/', dir: true }, { name: 'l', symlink: 'x/y/../..' }], /"l" is a symlink to x\/y\/\.\.\/\.\./);
    await expectRefused(format, [{ name: 'sub/', dir: true }, { name: 'back', symlink: 'sub/../src' }], /"back" is a symlink to sub\/\.\.\/src/);
  });

  it("refuses re-aiming a link of the project's own that an entry went through", async () => {
    // w -> a/.. leads to the project root while a is a directory; with a -> . it leads to its parent.
    await mkdir(join(project, 'a'));
    await symlink('a/..', join(project, 'w'));
    await expectRefused(format, [{ name: 'w/through.txt', file: 'x' }, { name: 'a', symlink: '.' }], /the symlink w -> a\/\.\. already in the project dir would, once the archive is extracted, lead outside the project dir/);
  });

  it("refuses links into the project's .git, named or through a link of the project's own", async () => {
    await expectRefused(format, [{ name: 'hooks', symlink: '.git/hooks' }], /"hooks" is a symlink to \.git\/hooks: it goes into a \.git directory/);
    await symlink('.git', join(project, 'meta'));
    await expectRefused(format, [{ name: 'cfg', symlink: 'meta/config' }], /"cfg" is a symlink to meta\/config, which once the whole archive is extracted leads into the project's \.git directory/);
  });

  it('refuses an entry below a file an earlier entry made (d a symlink, then a file, then d/inner.txt)', async () => {
    await expectRefused(
      format,
      [{ name: 'real/', dir: true }, { name: 'd', symlink: 'real' }, { name: 'd', file: 'now a file' }, { name: 'd/inner.txt', file: 'x' }],
      /"d\/inner\.txt" needs d to be a directory, but entry "d" made it a file/,
    );
  });

  it('extracts links re-pointed inside, ..-led targets, a link to a link, and files written through links', async () => {
    await extract(format, [
      { name: 'lib/', dir: true },
      { name: 'lib/tool.js', file: 'tool' },
      { name: 'bin/', dir: true },
      { name: 'bin/tool', symlink: '../lib/tool.js' },
      { name: 'current', symlink: 'src' },
      { name: 'current', symlink: 'lib' },
      { name: 'current/extra.txt', file: 'through the link' },
      { name: 'alias', symlink: 'current' },
      { name: 'lib/self', symlink: '.' },
    ]);
    expect(await readFile(join(project, 'bin/tool'), 'utf8')).toBe('tool');
    expect(await readlink(join(project, 'current'))).toBe('lib');
    expect(await readFile(join(project, 'lib/extra.txt'), 'utf8')).toBe('through the link');
    expect(await readFile(join(project, 'alias/self/extra.txt'), 'utf8')).toBe('through the link');
  });

  it("judges a link where the archive leaves it: through a link of the previous job's that a later entry replaces", async () => {
    // The previous job left old -> (outside); the archive links into old/ first and makes old a directory after.
    await symlink(outside, join(project, 'old'));
    await extract(format, [{ name: 'a', symlink: 'old/x' }, { name: 'old/', dir: true }, { name: 'old/x', file: 'inside now' }]);
    expect(await readFile(join(project, 'a'), 'utf8')).toBe('inside now');
    expect(await treeOf(outside)).toEqual({ secret: 'file:644:do not touch' });
  });

  it('refuses a link that leads out through a link of the project dir the archive leaves in place', async () => {
    await symlink(outside, join(project, 'old'));
    await expectRefused(format, [{ name: 'a', symlink: 'old/secret' }], /"a" is a symlink to old\/secret, which once the whole archive is extracted leads outside the project dir \(through the symlink old -> /);
  });

  it('replaces a symlink by a directory and a directory by a symlink, as the later entry says', async () => {
    await extract(format, [
      { name: 'real/', dir: true },
      { name: 'd', symlink: 'real' },
      { name: 'd/one.txt', file: 'into real' },
      { name: 'd/', dir: true },
      { name: 'd/two.txt', file: 'into the new d' },
      { name: 'x/', dir: true },
      { name: 'x/old.txt', file: 'gone with x' },
      { name: 'x', symlink: 'real' },
    ]);
    const tree = await treeOf(project);
    expect(tree).toMatchObject({ 'real/one.txt': 'file:644:into real', d: 'dir', 'd/two.txt': 'file:644:into the new d', x: 'link:real' });
    expect(tree['d/one.txt']).toBeUndefined();
    expect(tree['x/old.txt']).toBeUndefined();
  });

  it('replaces what the previous job left: a file, a link, and a file where the archive needs a directory', async () => {
    await mkdir(join(project, 'v1'));
    await symlink('v1', join(project, 'current'));
    await writeFile(join(project, 'keep.txt'), 'old');
    await writeFile(join(project, 'build'), 'a file from the previous job');
    await extract(format, [{ name: 'v2/', dir: true }, { name: 'current', symlink: 'v2' }, { name: 'keep.txt', file: 'new' }, { name: 'build/out.bin', file: 'built' }]);
    expect(await readlink(join(project, 'current'))).toBe('v2');
    expect(await readFile(join(project, 'keep.txt'), 'utf8')).toBe('new');
    expect(await readFile(join(project, 'build/out.bin'), 'utf8')).toBe('built');
  });
});

describe('names the system cannot take (zip: names of any length)', () => {
  it('refuses a component over 255 bytes and a path over 4095 bytes before writing, not half-way', async () => {
    await expectRefused('zip', [{ name: `dir/${'n'.repeat(256)}`, file: 'x' }], /"dir\/n+" has a path component longer than 255 bytes/);
    const deep = Array.from({ length: 20 }, (_, i) => `${i}${'d'.repeat(240)}`).join('/');
    await expectRefused('zip', [{ name: `${deep}/f.txt`, file: 'x' }], /would be written at a path of \d+ bytes, longer than the 4095 the system takes/);
  });
});

describe('hard links judged on the layout (tar)', () => {
  it("refuses a hard link to a file in the project's .git", async () => {
    await expectRefused('tar.gz', [{ name: 'cfg', hardlink: '.git/config' }], /"cfg" is a hard link to \.git\/config, which is in the project's \.git directory/);
  });

  it('refuses a hard link to itself, or to a file in the directory it replaces (gone when it is linked)', async () => {
    await expectRefused('tar.gz', [{ name: 'f', file: 'x' }, { name: 'f', hardlink: 'f' }], /"f" is a hard link to f, which is not a regular file/);
    await expectRefused('tar.gz', [{ name: 'd/', dir: true }, { name: 'd/f', file: 'x' }, { name: 'd', hardlink: 'd/f' }], /"d" is a hard link to d\/f, which is not a regular file/);
  });

  it('refuses an entry below a file an earlier entry made, also a hard link', async () => {
    await expectRefused('tar.gz', [{ name: 'src/main.c', file: 'replaced' }, { name: 'h', hardlink: 'src/main.c' }, { name: 'h/x', file: 'x' }], /"h\/x" needs h to be a directory, but entry "h" made it a file/);
  });

  it('links to a file that a later entry replaces: the hard link keeps the old content', async () => {
    await extract('tar.gz', [{ name: 'a.txt', file: 'first' }, { name: 'b.txt', hardlink: 'a.txt' }, { name: 'a.txt', file: 'second' }]);
    expect(await readFile(join(project, 'b.txt'), 'utf8')).toBe('first');
    expect(await readFile(join(project, 'a.txt'), 'utf8')).toBe('second');
  });
});

describe('the extraction pass on its own (a proof that skips validation)', () => {
  it('removes a link that leads out once extraction ends, and says the extraction failed', async () => {
    await mkdir(join(project, 'a'));
    await symlink('a/..', join(project, 'w'));
    const file = join(base, 'archive.tar');
    await writeFile(file, buildArchive('tar', [{ name: 'l', symlink: 'w' }, { name: 'a', symlink: '.' }]));
    // A proof for this very file and project dir: only the extraction pass runs, as after a download.
    const validated = { file, format: 'tar' as const, root: await realpath(project) };
    const error = await extractArchive(file, project, signal, { validated }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_EXTRACT_FAILED');
    expect((error as Error).message).toMatch(/project dir changed while the archive was extracted, after 2 entries: entry "l" is a symlink to w, which leads outside the project dir \(removed l\)/);
    await expect(stat(join(project, 'l'))).rejects.toThrow(/ENOENT/);
  });
});
