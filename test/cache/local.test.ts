import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, readdir, readlink, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { archiveCache, localCacheFile, restoreCache } from '../../src/cache/index.js';
import type { CacheOptions } from '../../src/protocol/types.js';
import { buildArchive, fakeBuild, removeTempDirs, tempDir, testContext, treeOf, writeFiles } from '../artifacts/fixtures.js';
import { cacheOptions } from './fixtures.js';

afterEach(removeTempDirs);

const spec: CacheOptions = { key: 'deps', paths: ['vendor/'] };
const build = fakeBuild({ options: { cache: spec } });

async function job(files: Record<string, string> = {}, cache = spec): Promise<ReturnType<typeof testContext>> {
  const projectDir = await tempDir();
  await writeFiles(projectDir, files);
  return testContext({ build: fakeBuild({ options: { cache } }), projectDir, stateDir: await tempDir() });
}

const text = (ctx: { lines: string[] }): string => ctx.lines.join('\n');

describe('the local cache (no store configured)', () => {
  it('lives where GitLab Runner keeps it: <cache_dir>/<project path>/<key>/cache.zip, with metadata.json', async () => {
    const cacheDir = await tempDir();
    const first = await job({ 'vendor/lib/a.js': 'A', 'src/main.js': 'not cached' });
    expect(await archiveCache(first, cacheOptions(cacheDir, first.build))).toMatchObject({ bytes: expect.any(Number) });
    const file = join(cacheDir, 'group/project/deps/cache.zip');
    expect(localCacheFile(cacheDir, build, 'deps')).toBe(file);
    expect(text(first)).toMatch(/^Creating cache deps\.\.\.\nCreated cache "deps": 1 file\(s\)[^\n]*\nCreated cache$/);
    expect(JSON.parse(await readFile(join(dirname(file), 'metadata.json'), 'utf8'))).toEqual({ cachekey: 'deps' });

    const second = await job();
    await restoreCache(second, cacheOptions(cacheDir, second.build));
    expect(text(second)).toMatch(/^Checking cache for deps\.\.\.\nRestored cache "deps": 3 entries[^\n]*\nSuccessfully extracted cache$/);
    expect(await readFile(join(second.projectDir, 'vendor/lib/a.js'), 'utf8')).toBe('A');
    expect(existsSync(join(second.projectDir, 'src/main.js'))).toBe(false);
  });

  it('writes a zip that unzip reads: entries relative to the project dir, directories, a symlink, modes and times', async () => {
    const cacheDir = await tempDir();
    const ctx = await job({ 'vendor/bin/tool': '#!/bin/sh\n', 'vendor/data.txt': 'data' });
    await import('node:fs/promises').then((fs) => fs.chmod(join(ctx.projectDir, 'vendor/bin/tool'), 0o755));
    await symlink('data.txt', join(ctx.projectDir, 'vendor/link'));
    const past = new Date('2024-05-06T07:08:09Z');
    await utimes(join(ctx.projectDir, 'vendor/data.txt'), past, past);
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build));
    const file = localCacheFile(cacheDir, build, 'deps')!;
    const listing = await execa('unzip', ['-Z1', file]);
    expect(listing.stdout.split('\n').sort()).toEqual(['vendor/', 'vendor/bin/', 'vendor/bin/tool', 'vendor/data.txt', 'vendor/link']);
    await execa('unzip', ['-tq', file]);
    const out = await tempDir();
    await execa('unzip', ['-q', file, '-d', out]);
    expect(await readFile(join(out, 'vendor/data.txt'), 'utf8')).toBe('data');
    expect(await readlink(join(out, 'vendor/link'))).toBe('data.txt');
    expect((await stat(join(out, 'vendor/bin/tool'))).mode & 0o777).toBe(0o755);
    // unzip takes the DOS time (2 s steps); the UT field beside it has the second (GitLab Runner's Go reader takes that).
    expect(Math.abs((await stat(join(out, 'vendor/data.txt'))).mtimeMs - past.getTime())).toBeLessThanOrEqual(2000);
    expect((await execa('zipinfo', ['-v', file, 'vendor/data.txt'])).stdout).toMatch(/UT extra field modtime\): +2024 May 6 07:08:09 UTC/);
  });

  it('restores a cache.zip made the way GitLab Runner makes it (Info-ZIP with its extra fields), symlinks and times included', async () => {
    const source = await tempDir();
    await writeFiles(source, { 'vendor/a/b.txt': 'from gitlab-runner', 'vendor/run.sh': 'echo hi\n' });
    await import('node:fs/promises').then((fs) => fs.chmod(join(source, 'vendor/run.sh'), 0o750));
    await symlink('a/b.txt', join(source, 'vendor/alias'));
    const past = new Date('2023-01-02T03:04:05Z');
    await utimes(join(source, 'vendor/a/b.txt'), past, past);
    const cacheDir = await tempDir();
    const file = localCacheFile(cacheDir, build, 'deps')!;
    await mkdir(dirname(file), { recursive: true });
    // GitLab Runner's archiver: sorted paths relative to the project dir, "dir/" entries, symlinks
    // stored as links, UT (0x5455) and Unix uid/gid (0x7875) extra fields: what Info-ZIP writes too.
    await execa('zip', ['-q', '-r', '--symlinks', file, 'vendor'], { cwd: source });
    const ctx = await job();
    await restoreCache(ctx, cacheOptions(cacheDir, ctx.build));
    expect(text(ctx)).toMatch(/Successfully extracted cache/);
    expect(await readFile(join(ctx.projectDir, 'vendor/a/b.txt'), 'utf8')).toBe('from gitlab-runner');
    expect(await readlink(join(ctx.projectDir, 'vendor/alias'))).toBe('a/b.txt');
    expect((await stat(join(ctx.projectDir, 'vendor/run.sh'))).mode & 0o777).toBe(0o750);
    expect((await stat(join(ctx.projectDir, 'vendor/a/b.txt'))).mtime.toISOString()).toBe(past.toISOString());
  });

  it('says "Archive is up to date!" and writes nothing when no cached file is newer than the local copy', async () => {
    const cacheDir = await tempDir();
    const ctx = await job({ 'vendor/a': 'a' });
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build));
    const file = localCacheFile(cacheDir, build, 'deps')!;
    const before = await stat(file);
    const again = testContext({ build: ctx.build, projectDir: ctx.projectDir, stateDir: ctx.stateDir });
    expect(await archiveCache(again, cacheOptions(cacheDir, again.build))).toBeUndefined();
    expect(text(again)).toBe('Creating cache deps...\nArchive is up to date!\nCreated cache');
    expect((await stat(file)).mtimeMs).toBe(before.mtimeMs);

    await writeFile(join(ctx.projectDir, 'vendor/b'), 'b');
    const changed = testContext({ build: ctx.build, projectDir: ctx.projectDir, stateDir: ctx.stateDir });
    await archiveCache(changed, cacheOptions(cacheDir, changed.build));
    expect(text(changed)).toMatch(/Created cache "deps": 2 file/);
  });

  it('warns and goes on when nothing matches, the file is missing, or the archive is broken', async () => {
    const cacheDir = await tempDir();
    const empty = await job({ 'src/x': 'x' });
    await archiveCache(empty, cacheOptions(cacheDir, empty.build));
    expect(text(empty)).toMatch(/^Creating cache deps\.\.\.\n(WARNING: vendor\/: no matching files.*\n)?WARNING: No files to cache\.\nCreated cache$/);

    const miss = await job();
    expect(await restoreCache(miss, cacheOptions(cacheDir, miss.build))).toBeUndefined();
    expect(text(miss)).toBe('Checking cache for deps...\nWARNING: Cache file does not exist\nWARNING: Failed to extract cache');

    const file = localCacheFile(cacheDir, build, 'deps')!;
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, Buffer.from('PK\x03\x04 not really a zip'));
    const broken = await job();
    await restoreCache(broken, cacheOptions(cacheDir, broken.build));
    expect(text(broken)).toMatch(/WARNING: .*not a readable zip archive.*\nWARNING: Failed to extract cache$/);
  });

  it('restores nothing of a cache whose link would lead out of the project dir', async () => {
    const cacheDir = await tempDir();
    const file = localCacheFile(cacheDir, build, 'deps')!;
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, buildArchive('zip', [
      { name: 'vendor/a.js', file: 'A' },
      { name: 'vendor/x/y/', dir: true },
      { name: 'vendor/up', symlink: '../../..' },
    ]));
    const ctx = await job({ 'src/main.c': 'checked out' });
    const before = await treeOf(ctx.projectDir);
    await restoreCache(ctx, cacheOptions(cacheDir, ctx.build));
    expect(text(ctx)).toMatch(/WARNING: refusing the whole archive, nothing was extracted: entry "vendor\/up" is a symlink.*\nWARNING: Failed to extract cache$/);
    expect(await treeOf(ctx.projectDir)).toEqual(before);
  });

  it('sanitises keys as GitLab Runner does, so none leaves the cache dir', async () => {
    const cacheDir = await tempDir();
    const cache = { key: '../../escape', paths: ['vendor/'] };
    const ctx = await job({ 'vendor/a': 'a' }, cache);
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build));
    expect(text(ctx)).toMatch(/^WARNING: cache key "..\/..\/escape" sanitized to "escape"\nCreating cache escape\.\.\./);
    expect(existsSync(join(cacheDir, 'group/project/escape/cache.zip'))).toBe(true);
    const none = await job({}, { key: '..', paths: ['vendor/'] });
    await archiveCache(none, cacheOptions(cacheDir, none.build));
    expect(text(none)).toBe('WARNING: cache key ".." could not be sanitized\nSkipping cache archiving due to empty cache key');
  });

  it('keys a cache with no key by <job name>/<ref>, and expands variables in keys', async () => {
    const cacheDir = await tempDir();
    const ctx = await job({ 'vendor/a': 'a' }, { paths: ['vendor/'] });
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build));
    expect(existsSync(join(cacheDir, 'group/project/test/main/cache.zip'))).toBe(true);
    const named = await job({ 'vendor/a': 'a' }, { key: 'deps-$CI_COMMIT_REF_SLUG', paths: ['vendor/'] });
    await archiveCache(named, cacheOptions(cacheDir, named.build, { variables: { CI_COMMIT_REF_SLUG: 'feature-x' } }));
    expect(existsSync(join(cacheDir, 'group/project/deps-feature-x/cache.zip'))).toBe(true);
  });

  it('falls back to fallback_keys, then CACHE_FALLBACK_KEY, never to one ending in -protected', async () => {
    const cacheDir = await tempDir();
    const seed = await job({ 'vendor/from-main': 'main' }, { key: 'main', paths: ['vendor/'] });
    await archiveCache(seed, cacheOptions(cacheDir, seed.build));
    const cache = { key: 'feature', paths: ['vendor/'], fallback_keys: ['nothing-$X', 'main'] };
    const ctx = await job({}, cache);
    await restoreCache(ctx, cacheOptions(cacheDir, ctx.build, { variables: { X: 'here' } }));
    expect(text(ctx)).toMatch(/^Checking cache for feature\.\.\.\nWARNING: Cache file does not exist\nWARNING: Failed to extract cache\nChecking cache for nothing-here\.\.\.\n(.*\n){2}Checking cache for main\.\.\.\nRestored cache "main"/);
    expect(await readFile(join(ctx.projectDir, 'vendor/from-main'), 'utf8')).toBe('main');

    const fallback = await job({}, { key: 'feature', paths: ['vendor/'] });
    await restoreCache(fallback, cacheOptions(cacheDir, fallback.build, { variables: { CACHE_FALLBACK_KEY: 'main' } }));
    expect(text(fallback)).toMatch(/Checking cache for main\.\.\.\nRestored cache "main"/);
    const guarded = await job({}, { key: 'feature', paths: ['vendor/'] });
    await restoreCache(guarded, cacheOptions(cacheDir, guarded.build, { variables: { CACHE_FALLBACK_KEY: 'main-protected' } }));
    expect(text(guarded)).toMatch(/^WARNING: CACHE_FALLBACK_KEY "main-protected" not allowed to end in "-protected"\nChecking cache for feature\.\.\./);
    expect(text(guarded)).not.toMatch(/Checking cache for main-protected/);
  });

  it('reads policy from a variable, and refuses a policy that is none of GitLab\'s', async () => {
    const cacheDir = await tempDir();
    const cache = { key: 'deps', paths: ['vendor/'], policy: '$CACHE_POLICY' };
    const pull = await job({ 'vendor/a': 'a' }, cache);
    expect(await archiveCache(pull, cacheOptions(cacheDir, pull.build, { variables: { CACHE_POLICY: 'pull' } }))).toBeUndefined();
    expect(text(pull)).toBe('Not uploading cache deps due to policy');
    const push = await job({}, cache);
    await restoreCache(push, cacheOptions(cacheDir, push.build, { variables: { CACHE_POLICY: 'push' } }));
    expect(text(push)).toBe('Not downloading cache deps due to policy');
    const wrong = await job({}, cache);
    await expect(restoreCache(wrong, cacheOptions(cacheDir, wrong.build, { variables: { CACHE_POLICY: 'sometimes' } }))).rejects.toMatchObject({ code: 'CACHE_POLICY_UNKNOWN', message: 'unknown cache policy sometimes for deps' });
  });

  it('stores files uncompressed for CACHE_COMPRESSION_LEVEL=fastest and warns about a level it does not know', async () => {
    const cacheDir = await tempDir();
    const ctx = await job({ 'vendor/a.txt': 'x'.repeat(10_000) });
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build, { variables: { CACHE_COMPRESSION_LEVEL: 'fastest' } }));
    const listing = await execa('unzip', ['-v', localCacheFile(cacheDir, build, 'deps')!]);
    expect(listing.stdout).toMatch(/10000\s+Stored\s+10000/);
    const odd = await job({ 'vendor/a.txt': 'x' });
    await archiveCache(odd, cacheOptions(await tempDir(), odd.build, { variables: { CACHE_COMPRESSION_LEVEL: 'ultra', CACHE_COMPRESSION_FORMAT: 'tarzstd' } }));
    expect(text(odd)).toMatch(/^WARNING: compression level "ultra" is invalid, falling back to default\nWARNING: CACHE_COMPRESSION_FORMAT "tarzstd" is not supported by ci-runner; the cache is written as zip/);
  });

  it('never lets a restoring job see a half-written cache while others write it', async () => {
    const cacheDir = await tempDir();
    const payload = (n: number): Record<string, string> => ({ 'vendor/id.txt': String(n), 'vendor/blob.txt': String(n).repeat(400_000) });
    const writers = await Promise.all([1, 2, 3, 4].map((n) => job(payload(n))));
    await archiveCache(writers[0]!, cacheOptions(cacheDir, build));
    let writing = true;
    const readers = (async () => {
      let restores = 0;
      while (writing || restores < 3) {
        const reader = await job();
        await restoreCache(reader, cacheOptions(cacheDir, build));
        expect(text(reader)).not.toMatch(/WARNING/);
        const id = await readFile(join(reader.projectDir, 'vendor/id.txt'), 'utf8');
        expect(await readFile(join(reader.projectDir, 'vendor/blob.txt'), 'utf8')).toBe(id.repeat(400_000));
        restores += 1;
      }
      return restores;
    })();
    for (let round = 0; round < 3; round += 1) {
      // Each writer's files are newer than the archive another wrote: touch them so none is "up to date".
      for (const writer of writers) {
        const now = new Date(Date.now() + (round + 1) * 60_000);
        await utimes(join(writer.projectDir, 'vendor/id.txt'), now, now);
      }
      await Promise.all(writers.map((writer) => archiveCache(writer, cacheOptions(cacheDir, build))));
    }
    writing = false;
    expect(await readers).toBeGreaterThanOrEqual(3);
    for (const writer of writers) expect(text(writer)).not.toMatch(/WARNING/);
    expect((await readdir(dirname(localCacheFile(cacheDir, build, 'deps')!))).sort()).toEqual(['cache.zip', 'metadata.json']);
    expect((await lstat(localCacheFile(cacheDir, build, 'deps')!)).isFile()).toBe(true);
  });
});
