/**
 * Archives that inflate far past their size, and a disk that fills up: the extract budget
 * (`artifacts_extract_limit`) refuses them unwritten, and a full disk (a small tmpfs) fails the
 * download with DISK_FULL after removing everything it wrote — for tar.gz and zip, for downloaded
 * artifacts (through the reference server) and for a cache restore.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, type TestContext as VitestContext } from 'vitest';
import { ArtifactsError, downloadArtifacts, extractArchive } from '../../src/artifacts/index.js';
import { localCacheFile, restoreCache } from '../../src/cache/index.js';
import { ExtractBudget } from '../../src/artifacts/budget.js';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import type { BuildPayload } from '../../src/protocol/types.js';
import { writeTarGzBomb, writeZerosTarGz, writeZipBomb } from '../helpers/bombs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';
import { cacheOptions } from '../cache/fixtures.js';
import { fakeBuild, rawTarGz, removeTempDirs, tempDir, testContext, writeFiles } from './fixtures.js';

const MiB = 1024 * 1024;
const FORMATS = ['tar.gz', 'zip'] as const;
type Format = (typeof FORMATS)[number];

let t: TestServer;
let client: RunnerApiClient;
let runnerToken: string;
/** 64 MiB of zeros in each format (~64 KB): more than the 8 MiB tmpfs and the budgets below. */
const bombs = {} as Record<Format, string>;

beforeAll(async () => {
  t = await startTestServer();
  client = new RunnerApiClient({ url: t.url });
  runnerToken = (await t.registerRunner()).token;
  const dir = await tempDir('ci-bombs-');
  bombs['tar.gz'] = join(dir, 'bomb.tar.gz');
  bombs.zip = join(dir, 'bomb.zip');
  await Promise.all([writeTarGzBomb(bombs['tar.gz'], 64 * MiB), writeZipBomb(bombs.zip, 64 * MiB)]);
});
afterAll(async () => {
  await client.close();
  await t.close();
  await removeTempDirs();
});

const mounts: Tmpfs[] = [];
afterEach(async () => {
  for (const mount of mounts.splice(0)) await mount.unmount();
});

async function nextBuild(): Promise<BuildPayload> {
  const result = await client.requestBuild(runnerToken, undefined);
  if (result.kind !== 'build') throw new Error(`expected a build, got ${result.kind} (${result.status})`);
  return result.build;
}

/** Runs the build stage's jobs as `archives` (file → uploaded name) and returns the test stage's build. */
async function dependingOn(archives: Array<{ path: string; filename: string }>): Promise<BuildPayload> {
  const makers = archives.map((_, i) => `make${i}:\n  stage: build\n  script: [x]\n`).join('');
  await t.pipeline(`stages: [build, test]\n${makers}use:\n  stage: test\n  script: [x]\n`);
  for (let i = 0; i < archives.length; i += 1) {
    const make = await nextBuild();
    const archive = archives[Number(make.name.slice('make'.length))];
    if (!archive) throw new Error(`unexpected build ${make.name}`);
    expect((await client.uploadArtifacts(make.id, make.token, archive)).status).toBe(201);
    expect((await client.updateBuild(make.id, runnerToken, { state: 'success', trace: '' })).outcome).toBe('ok');
  }
  return nextBuild();
}

/** A tmpfs for the test, or undefined (the test skipped, the reason printed) where none can be mounted. */
async function smallDisk(sizeMiB: number, ctx: VitestContext): Promise<string | undefined> {
  const mounted = await mountTmpfs(sizeMiB);
  if ('skip' in mounted) {
    console.log(`skipped "${ctx.task.name}": ${mounted.skip}`);
    ctx.skip();
    return undefined;
  }
  mounts.push(mounted);
  return mounted.dir;
}

/** Every path under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).sort();
}

async function usedBytes(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return (stats.blocks - stats.bfree) * stats.bsize;
}

describe.each(FORMATS)('artifacts_extract_limit (%s)', (format) => {
  it('refuses a dependency whose files exceed the limit before writing any, without a retry', async () => {
    const use = await dependingOn([{ path: bombs[format], filename: `artifacts.${format}` }]);
    const ctx = { ...testContext({ build: use, projectDir: await tempDir(), stateDir: await tempDir(), client }), extractBudget: new ExtractBudget(8 * MiB) };
    const error = await downloadArtifacts(ctx, { attempts: 3, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ArtifactsError);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_OVER_LIMIT');
    expect((error as Error).message).toMatch(/^artifacts of make0 \(\d+\): the archive holds at least 64\.0 MB of files, more than the 8\.00 MB left of the job's artifacts_extract_limit \(8\.00 MB\); nothing of it was extracted\. Raise artifacts_extract_limit/);
    expect(ctx.lines.join('\n')).not.toMatch(/retrying/);
    expect(await readdir(ctx.projectDir)).toEqual([]);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });
});

describe('artifacts_extract_limit across a job', () => {
  it('counts every archive of the job against one limit: the second dependency is refused', async () => {
    const source = await tempDir();
    const archives = [];
    for (const name of ['one', 'two']) {
      const path = join(source, `${name}.tar.gz`);
      await writeFile(path, rawTarGz([{ name: `${name}.bin`, type: '0', content: Buffer.alloc(3 * MiB) }]));
      archives.push({ path, filename: 'artifacts.tar.gz' });
    }
    const use = await dependingOn(archives);
    const ctx = { ...testContext({ build: use, projectDir: await tempDir(), stateDir: await tempDir(), client }), extractBudget: new ExtractBudget(5 * MiB) };
    const error = await downloadArtifacts(ctx, { attempts: 1 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_OVER_LIMIT');
    expect((error as Error).message).toMatch(/artifacts of make1 .*more than the 2\.00 MB left of the job's artifacts_extract_limit \(5\.00 MB; earlier archives of this job took 3\.00 MB of it\)/);
    expect(await readdir(ctx.projectDir)).toEqual(['one.bin']);
  });

  it('skips a cache over the limit with a warning naming the key, and the job goes on', async () => {
    const cacheDir = await tempDir();
    const build = fakeBuild({ options: { cache: { key: 'deps', paths: ['vendor/'] } } });
    const file = localCacheFile(cacheDir, build, 'deps')!;
    await mkdir(dirname(file), { recursive: true });
    await copyFile(bombs['tar.gz'], file);
    const ctx = { ...testContext({ build, projectDir: await tempDir(), stateDir: await tempDir() }), extractBudget: new ExtractBudget(MiB) };
    await restoreCache(ctx, cacheOptions(cacheDir, build));
    expect(ctx.lines.join('\n')).toMatch(/Checking cache for deps...\nWARNING: the archive holds at least 64\.0 MB .*artifacts_extract_limit.*\nWARNING: Failed to extract cache/);
    expect(await readdir(ctx.projectDir)).toEqual([]);
  });
});

describe.each(FORMATS)('a full disk (%s)', (format) => {
  it('fails the download with DISK_FULL when extracting fills the disk, and removes what it wrote', async (test) => {
    const disk = await smallDisk(8, test);
    if (!disk) return;
    const use = await dependingOn([{ path: bombs[format], filename: `artifacts.${format}` }]);
    const ctx = testContext({ build: use, projectDir: join(disk, 'project'), stateDir: join(disk, 'state'), client });
    await writeFiles(ctx.projectDir, { 'src/main.c': 'int main;', 'README': 'kept' });
    await mkdir(ctx.stateDir);
    const before = await tree(ctx.projectDir);
    const used = await usedBytes(disk);

    const error = await downloadArtifacts(ctx, { attempts: 3, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ArtifactsError);
    expect((error as ArtifactsError).code).toBe('DISK_FULL');
    expect((error as Error).message).toMatch(/^artifacts of make0 \(\d+\): no space left on the device \(ENOSPC\) while extracting into .*project; removed what it had written \(0 entries complete, 0\.00 MB, and the one in progress\)/);
    expect(ctx.lines.join('\n')).not.toMatch(/retrying/);
    expect(await tree(ctx.projectDir)).toEqual(before);
    expect(await readFile(join(ctx.projectDir, 'README'), 'utf8')).toBe('kept');
    expect(await readdir(ctx.stateDir)).toEqual([]);
    expect(await usedBytes(disk)).toBeLessThanOrEqual(used + 64 * 1024);
  });
});

describe('a full disk', () => {
  it('needs room for the files once: 64 MiB inflated extracts on a disk with 72 MiB free', async (test) => {
    const disk = await smallDisk(72, test);
    if (!disk) return;
    const use = await dependingOn([{ path: bombs['tar.gz'], filename: 'artifacts.tar.gz' }]);
    const ctx = testContext({ build: use, projectDir: join(disk, 'project'), stateDir: join(disk, 'state'), client });
    await downloadArtifacts(ctx, { attempts: 1 });
    expect(ctx.lines.join('\n')).toMatch(/Extracted 1 entries \(64\.0 MB, tar\.gz\)/);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });

  it('fails a download that does not fit on the disk with DISK_FULL, without a retry, and removes the partial file', async (test) => {
    const disk = await smallDisk(8, test);
    if (!disk) return;
    const source = await tempDir();
    const archive = join(source, 'big.tar.gz');
    // Random bytes do not compress: the download itself is ~3 MiB, where ~1 MiB is left.
    await writeFile(archive, rawTarGz([{ name: 'noise.bin', type: '0', content: randomBytes(3 * MiB) }]));
    await writeFile(join(disk, 'ballast'), Buffer.alloc(7 * MiB));
    const use = await dependingOn([{ path: archive, filename: 'artifacts.tar.gz' }]);
    const ctx = testContext({ build: use, projectDir: join(disk, 'project'), stateDir: join(disk, 'state'), client });
    await mkdir(ctx.projectDir);
    await mkdir(ctx.stateDir);

    const error = await downloadArtifacts(ctx, { attempts: 3, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('DISK_FULL');
    expect((error as Error).message).toMatch(/^artifacts of make0 \(\d+\): no space left on the device \(ENOSPC\) while downloading to .*state\/artifacts-download-\d+; the partial download is removed\. Free space on that filesystem \(the runner's builds_dir\)$/);
    expect(ctx.lines.join('\n')).not.toMatch(/retrying/);
    expect(await readdir(ctx.stateDir)).toEqual([]);
    expect(await readdir(ctx.projectDir)).toEqual([]);
  });

  it('skips a cache that fills the disk with a warning, removing what it wrote', async (test) => {
    const disk = await smallDisk(8, test);
    if (!disk) return;
    const cacheDir = await tempDir();
    const build = fakeBuild({ options: { cache: { key: 'deps', paths: ['vendor/'] } } });
    const file = localCacheFile(cacheDir, build, 'deps')!;
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, rawTarGz([
      { name: 'vendor/', type: '5' },
      { name: 'vendor/small.txt', type: '0', content: 'small' },
      { name: 'vendor/deep/', type: '5' },
      { name: 'vendor/deep/big.bin', type: '0', content: Buffer.alloc(16 * MiB) },
    ]));
    const ctx = testContext({ build, projectDir: join(disk, 'project'), stateDir: join(disk, 'state') });
    await writeFiles(ctx.projectDir, { 'src/main.c': 'int main;' });
    await restoreCache(ctx, cacheOptions(cacheDir, build));
    expect(ctx.lines.join('\n')).toMatch(/WARNING: no space left on the device \(ENOSPC\) while extracting into .*project; removed what it had written \(3 entries complete/);
    expect(await tree(ctx.projectDir)).toEqual(['src', 'src/main.c']);
  });
});

describe('a failed extraction', () => {
  it('takes back what it wrote when the job is canceled mid-way, leaving what was there before', async () => {
    const project = await tempDir();
    await writeFiles(project, { 'keep.txt': 'kept' });
    const archive = join(await tempDir(), 'two.tar.gz');
    await writeZerosTarGz(archive, [
      { name: 'out/first.bin', bytes: MiB },
      { name: 'second.bin', bytes: 256 * MiB },
    ]);
    const controller = new AbortController();
    const extraction = extractArchive(archive, project, controller.signal).catch((caught: unknown) => caught);
    // Cancel while the big second file is being written (the first one is complete by then).
    const deadline = Date.now() + 20_000;
    while (!(await stat(join(project, 'second.bin')).then((s) => s.size > 0, () => false)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error('job canceled'));
    expect(((await extraction) as Error).message).toBe('job canceled');
    expect(await tree(project)).toEqual(['keep.txt']);
  });
});

describe('uploaded bombs still round-trip when they fit', () => {
  it('extracts an archive that inflates 1000-fold when the limit allows it', async () => {
    const use = await dependingOn([{ path: bombs['tar.gz'], filename: 'artifacts.tar.gz' }]);
    const ctx = { ...testContext({ build: use, projectDir: await tempDir(), stateDir: await tempDir(), client }), extractBudget: new ExtractBudget(64 * MiB) };
    await downloadArtifacts(ctx, { attempts: 1 });
    expect(ctx.lines.join('\n')).toMatch(/Extracted 1 entries \(64\.0 MB, tar\.gz\) from the artifacts of make0/);
    expect(ctx.extractBudget.used).toBe(64 * MiB);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });
});
