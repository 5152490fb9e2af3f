import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { archiveCache, cacheFilePath, restoreCache } from '../../src/artifacts/index.js';
import { buildArchive, fakeBuild, removeTempDirs, tempDir, testContext, treeOf, writeFiles } from './fixtures.js';

afterEach(removeTempDirs);

const build = fakeBuild({ options: { cache: { key: 'deps', paths: ['vendor/'] } } });

async function job(files: Record<string, string> = {}): Promise<ReturnType<typeof testContext>> {
  const projectDir = await tempDir();
  await writeFiles(projectDir, files);
  return testContext({ build, projectDir, stateDir: await tempDir() });
}

describe('local cache', () => {
  it('is a warning, not a failure, on a miss', async () => {
    const cacheDir = await tempDir();
    const ctx = await job();
    await restoreCache(ctx, { cacheDir, runnerName: 'r1', key: 'deps' });
    expect(ctx.lines.join('\n')).toMatch(/WARNING: no cache for key "deps" yet/);
  });

  it('hands one job’s cache paths to the next job with the same key', async () => {
    const cacheDir = await tempDir();
    const first = await job({ 'vendor/lib/a.js': 'A', 'src/main.js': 'not cached' });
    await archiveCache(first, { cacheDir, runnerName: 'r1', key: 'deps' });
    expect(existsSync(cacheFilePath(cacheDir, 'r1', build, 'deps'))).toBe(true);
    expect(cacheFilePath(cacheDir, 'r1', build, 'deps')).toBe(join(cacheDir, 'r1', 'group/project', 'deps.tar.gz'));

    const second = await job();
    await restoreCache(second, { cacheDir, runnerName: 'r1', key: 'deps' });
    expect(await readFile(join(second.projectDir, 'vendor/lib/a.js'), 'utf8')).toBe('A');
    expect(existsSync(join(second.projectDir, 'src/main.js'))).toBe(false);

    const otherKey = await job();
    await restoreCache(otherKey, { cacheDir, runnerName: 'r1', key: 'other' });
    expect(existsSync(join(otherKey.projectDir, 'vendor'))).toBe(false);
  });

  it('warns about a broken cache archive and goes on', async () => {
    const cacheDir = await tempDir();
    const file = cacheFilePath(cacheDir, 'r1', build, 'deps');
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 1, 2, 3]));
    const ctx = await job();
    await restoreCache(ctx, { cacheDir, runnerName: 'r1', key: 'deps' });
    expect(ctx.lines.join('\n')).toMatch(/WARNING: cache "deps" not restored: .*not a readable tar archive/);
  });

  it('restores nothing of a cache whose later entry re-aims an earlier link out of the project dir', async () => {
    const cacheDir = await tempDir();
    const file = cacheFilePath(cacheDir, 'r1', build, 'deps');
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, buildArchive('tar.gz', [
      { name: 'vendor/a.js', file: 'A' },
      { name: 'vendor/x/y/', dir: true },
      { name: 'vendor/up', symlink: 'x/y/../../..' },
      { name: 'vendor/x/y', symlink: '.' },
    ]));
    const ctx = await job({ 'src/main.c': 'checked out' });
    const before = await treeOf(ctx.projectDir);
    await restoreCache(ctx, { cacheDir, runnerName: 'r1', key: 'deps' });
    expect(ctx.lines.join('\n')).toMatch(/WARNING: cache "deps" not restored: refusing the whole archive, nothing was extracted: entry "vendor\/up" is a symlink to x\/y\/\.\.\/\.\.\/\.\./);
    expect(await treeOf(ctx.projectDir)).toEqual(before);
  });

  it('refuses a key with .. and keeps different keys in different files', async () => {
    const cacheDir = await tempDir();
    const ctx = await job({ 'vendor/a': 'a' });
    await archiveCache(ctx, { cacheDir, runnerName: 'r1', key: '../../escape' });
    expect(ctx.lines.join('\n')).toMatch(/WARNING: cache "..\/..\/escape" not saved: cache key/);
    expect(await readdir(cacheDir)).toEqual([]);

    expect(cacheFilePath(cacheDir, 'r1', build, 'a/b')).not.toBe(cacheFilePath(cacheDir, 'r1', build, 'a_b'));
    expect(dirname(cacheFilePath(cacheDir, 'r1', build, 'a/b'))).toBe(join(cacheDir, 'r1', 'group/project'));
  });

  it('never lets a restoring job see a half-written cache while others write it', async () => {
    const cacheDir = await tempDir();
    const payload = (n: number): Record<string, string> => ({ 'vendor/id.txt': String(n), 'vendor/blob.txt': String(n).repeat(400_000) });
    const writers = await Promise.all([1, 2, 3, 4].map((n) => job(payload(n))));
    // Seed once so restores hit from the start.
    await archiveCache(writers[0]!, { cacheDir, runnerName: 'r1', key: 'deps' });

    let writing = true;
    const readers = (async () => {
      let restores = 0;
      while (writing || restores < 3) {
        const reader = await job();
        await restoreCache(reader, { cacheDir, runnerName: 'r1', key: 'deps' });
        expect(reader.lines.join('\n')).not.toMatch(/WARNING/);
        const id = await readFile(join(reader.projectDir, 'vendor/id.txt'), 'utf8');
        expect(await readFile(join(reader.projectDir, 'vendor/blob.txt'), 'utf8')).toBe(id.repeat(400_000));
        restores += 1;
      }
      return restores;
    })();
    for (let round = 0; round < 3; round += 1) {
      await Promise.all(writers.map((writer) => archiveCache(writer, { cacheDir, runnerName: 'r1', key: 'deps' })));
    }
    writing = false;
    expect(await readers).toBeGreaterThanOrEqual(3);
    for (const writer of writers) expect(writer.lines.join('\n')).not.toMatch(/WARNING/);
    // Only the final file is left: every temp file was renamed into place.
    expect(await readdir(dirname(cacheFilePath(cacheDir, 'r1', build, 'deps')))).toEqual(['deps.tar.gz']);
  });
});
