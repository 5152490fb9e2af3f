/**
 * The cache's feature flags as GitLab Runner 19 honours them: FF_HASH_CACHE_KEYS (a key stored under its
 * SHA-256, sharded in the store by the hash's first two hex digits, not sanitised; a cache saved under the
 * other scheme found through the alternate name) and FF_CLEAN_UP_FAILED_CACHE_EXTRACT (a cache that fails
 * to extract removes the cache's paths, never anything outside the project dir). The store is the kit's S3.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeleteObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { archiveCache, restoreCache, type CacheConfig } from '../../src/cache/index.js';
import type { CacheOptions } from '../../src/protocol/types.js';
import { fakeBuild, removeTempDirs, tempDir, testContext, writeFiles } from '../artifacts/fixtures.js';
import { s3, s3CacheConfig, skipS3, type S3Env } from '../helpers/s3.js';
import { cacheOptions } from './fixtures.js';

afterEach(removeTempDirs);

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const text = (ctx: { lines: string[] }): string => ctx.lines.join('\n');
const HASHED = { FF_HASH_CACHE_KEYS: 'true' };

async function job(files: Record<string, string>, cache: CacheOptions, projectId = 7): Promise<ReturnType<typeof testContext>> {
  const projectDir = await tempDir();
  await writeFiles(projectDir, files);
  return testContext({ build: fakeBuild({ project_id: projectId, options: { cache } }), projectDir, stateDir: await tempDir() });
}

describe('FF_HASH_CACHE_KEYS, locally', () => {
  it('keeps the cache under <cache_dir>/<project path>/<sha256 of the key>/cache.zip, the key unsanitised, and restores it', async () => {
    const cacheDir = await tempDir();
    const spec = { key: 'deps/../x', paths: ['vendor/'] };
    const writer = await job({ 'vendor/a': 'A' }, spec);
    await archiveCache(writer, cacheOptions(cacheDir, writer.build, { variables: HASHED }));
    expect(text(writer)).not.toContain('sanitized');
    expect(text(writer)).toContain('Creating cache deps/../x...');
    const dir = join(cacheDir, 'group/project', sha256('deps/../x'));
    expect(existsSync(join(dir, 'cache.zip'))).toBe(true);
    expect(JSON.parse(await readFile(join(dir, 'metadata.json'), 'utf8'))).toEqual({ cachekey: 'deps/../x' });
    const reader = await job({}, spec);
    await restoreCache(reader, cacheOptions(cacheDir, reader.build, { variables: HASHED }));
    expect(text(reader)).toContain('Successfully extracted cache');
    expect(await readFile(join(reader.projectDir, 'vendor/a'), 'utf8')).toBe('A');
  });
});

describe('FF_HASH_CACHE_KEYS turned on', () => {
  it('takes the local copy kept under the plain name as its own, as GitLab Runner\'s archiver does', async () => {
    const cacheDir = await tempDir();
    const spec = { key: 'deps', paths: ['vendor/'] };
    const first = await job({ 'vendor/a': 'A' }, spec);
    await archiveCache(first, cacheOptions(cacheDir, first.build));
    await archiveCache(first, cacheOptions(cacheDir, first.build, { variables: HASHED }));
    expect(text(first)).toMatch(/Archive is up to date!\nCreated cache$/);
    expect(existsSync(join(cacheDir, 'group/project', sha256('deps'), 'cache.zip'))).toBe(true);
    expect(existsSync(join(cacheDir, 'group/project/deps/cache.zip'))).toBe(false);
  });
});

describe('FF_CLEAN_UP_FAILED_CACHE_EXTRACT', () => {
  it('removes the cache\'s paths when its cache fails to extract, and leaves them without the flag', async () => {
    const spec = { key: 'missing', paths: ['vendor/', 'build/out'] };
    const on = await job({ 'vendor/stale': 's', 'build/out/old': 'o', 'build/keep': 'k' }, spec);
    await restoreCache(on, cacheOptions(await tempDir(), on.build, { variables: { FF_CLEAN_UP_FAILED_CACHE_EXTRACT: 'true' } }));
    expect(text(on)).toBe('Checking cache for missing...\nWARNING: Cache file does not exist\nWARNING: Failed to extract cache\nRemoving vendor/\nRemoving build/out');
    expect(existsSync(join(on.projectDir, 'vendor'))).toBe(false);
    expect(existsSync(join(on.projectDir, 'build/out'))).toBe(false);
    expect(existsSync(join(on.projectDir, 'build/keep'))).toBe(true);

    const off = await job({ 'vendor/stale': 's' }, spec);
    await restoreCache(off, cacheOptions(await tempDir(), off.build));
    expect(text(off)).not.toContain('Removing');
    expect(existsSync(join(off.projectDir, 'vendor/stale'))).toBe(true);
  });

  it('never removes what is outside the project dir: a path that climbs out, the project dir itself, or one through a symlink', async () => {
    const outside = await tempDir();
    await writeFile(join(outside, 'precious'), 'p');
    await mkdir(join(outside, 'dir'));
    await writeFile(join(outside, 'dir', 'precious'), 'p');
    const spec = { key: 'missing', paths: [`../${'x'}`, join(outside, 'precious'), '.', 'link/precious'] };
    const ctx = await job({}, spec);
    await symlink(join(outside, 'dir'), join(ctx.projectDir, 'link'));
    await restoreCache(ctx, cacheOptions(await tempDir(), ctx.build, { variables: { FF_CLEAN_UP_FAILED_CACHE_EXTRACT: '1' } }));
    expect(existsSync(join(outside, 'precious'))).toBe(true);
    expect(existsSync(join(outside, 'dir', 'precious'))).toBe(true);
    expect(existsSync(ctx.projectDir)).toBe(true);
    expect(text(ctx).match(/is not removed/g)).toHaveLength(4);
  });
});

let env: S3Env;
let client: S3Client;
const prefix = `ci-runner-test-ff-${randomBytes(4).toString('hex')}`;
beforeAll(() => {
  if (!s3) return;
  env = s3;
  client = new S3Client({ endpoint: env.endpoint.origin, region: env.region, forcePathStyle: true, credentials: { accessKeyId: env.accessKey, secretAccessKey: env.secretKey }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
});
afterAll(async () => {
  if (!client) return;
  const listed = await client.send(new ListObjectsV2Command({ Bucket: env.bucket, Prefix: `${prefix}/` }));
  for (const object of listed.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: env.bucket, Key: object.Key }));
  client.destroy();
});

describe.skipIf(skipS3)('FF_HASH_CACHE_KEYS in S3', () => {
  const config = (): CacheConfig => s3CacheConfig(env, { cache: { Path: prefix } });

  it('uploads under GitLab Runner\'s sharded name, and a runner without the flag finds it through the alternate name', async () => {
    const spec = { key: 'deps', paths: ['vendor/'] };
    const writer = await job({ 'vendor/a': 'hashed' }, spec, 901);
    await archiveCache(writer, cacheOptions(await tempDir(), writer.build, { config: config(), variables: HASHED }));
    const hash = sha256('deps');
    const object = `${prefix}/runner/abcdefghi/project/901/${hash.slice(0, 2)}/${hash}`;
    expect(text(writer)).toContain(`/${object}`);
    const head = await client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: object }));
    expect(head.Metadata).toEqual({ cachekey: 'deps' });

    // Turned off again: the unhashed name is missing, the hashed one is taken.
    const reader = await job({}, spec, 901);
    await restoreCache(reader, cacheOptions(await tempDir(), reader.build, { config: config() }));
    expect(text(reader)).toMatch(/^Checking cache for deps\.\.\.\nSelecting alternate cache URL: primary not available\nDownloaded cache from/m);
    expect(await readFile(join(reader.projectDir, 'vendor/a'), 'utf8')).toBe('hashed');
  });

  it('with a cache under both names, takes the newer object, whichever name the flag gives (GitLab Runner 19)', async () => {
    const spec = { key: 'both', paths: ['vendor/'] };
    const older = await job({ 'vendor/a': 'older, hashed' }, spec, 902);
    await archiveCache(older, cacheOptions(await tempDir(), older.build, { config: config(), variables: HASHED }));
    // Last-Modified counts whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const newer = await job({ 'vendor/a': 'newer, plain' }, spec, 902);
    await archiveCache(newer, cacheOptions(await tempDir(), newer.build, { config: config() }));

    const flagOn = await job({}, spec, 902);
    await restoreCache(flagOn, cacheOptions(await tempDir(), flagOn.build, { config: config(), variables: HASHED }));
    expect(text(flagOn)).toMatch(/^Checking cache for both\.\.\.\nSelecting alternate cache URL: newer timestamp\nDownloaded cache from/m);
    expect(await readFile(join(flagOn.projectDir, 'vendor/a'), 'utf8')).toBe('newer, plain');

    const flagOff = await job({}, spec, 902);
    await restoreCache(flagOff, cacheOptions(await tempDir(), flagOff.build, { config: config() }));
    expect(text(flagOff)).not.toContain('Selecting alternate');
    expect(await readFile(join(flagOff.projectDir, 'vendor/a'), 'utf8')).toBe('newer, plain');
  });
});
