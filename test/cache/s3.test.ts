import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { archiveCache, localCacheFile, restoreCache, type CacheConfig } from '../../src/cache/index.js';
import type { CacheOptions } from '../../src/protocol/types.js';
import { buildArchive, fakeBuild, removeTempDirs, tempDir, testContext, treeOf, writeFiles } from '../artifacts/fixtures.js';
import { s3, s3CacheConfig, skipS3, type S3Env } from '../helpers/s3.js';
import { cacheOptions } from './fixtures.js';

let env: S3Env;
let client: S3Client;
/** Every object of this file lives under this Path, removed at the end. */
const prefix = `ci-runner-test-${randomBytes(4).toString('hex')}`;

beforeAll(() => {
  if (!s3) return;
  env = s3;
  client = new S3Client({ endpoint: env.endpoint.origin, region: env.region, forcePathStyle: true, credentials: { accessKeyId: env.accessKey, secretAccessKey: env.secretKey }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
});

afterEach(removeTempDirs);

afterAll(async () => {
  if (!client) return;
  const listed = await client.send(new ListObjectsV2Command({ Bucket: env.bucket, Prefix: `${prefix}/` }));
  for (const object of listed.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: env.bucket, Key: object.Key }));
  client.destroy();
});

const spec: CacheOptions = { key: 'deps', paths: ['vendor/'] };
let projects = 100;

/** A job of a fresh project (so no two tests share objects), in its own project dir. */
async function job(files: Record<string, string> = {}, projectId?: number, cache = spec): Promise<ReturnType<typeof testContext>> {
  const projectDir = await tempDir();
  await writeFiles(projectDir, files);
  return testContext({ build: fakeBuild({ project_id: projectId ?? (projects += 1), options: { cache } }), projectDir, stateDir: await tempDir() });
}

const text = (ctx: { lines: string[] }): string => ctx.lines.join('\n');
const config = (extra: Parameters<typeof s3CacheConfig>[1] = {}): CacheConfig => s3CacheConfig(env, { ...extra, cache: { Path: prefix, ...extra.cache } });

describe.skipIf(skipS3)('the distributed cache in S3 (Ceph radosgw)', () => {
  it('shares a cache between two runners with different cache dirs, at GitLab Runner\'s object name', async () => {
    const [cacheA, cacheB] = [await tempDir(), await tempDir()];
    const writer = await job({ 'vendor/lib/a.js': 'from runner A', 'src/main.js': 'not cached' });
    const project = writer.build.project_id;
    await archiveCache(writer, cacheOptions(cacheA, writer.build, { config: config() }));
    const object = `${prefix}/runner/abcdefghi/project/${project}/deps`;
    expect(text(writer)).toMatch(new RegExp(`Uploading cache\\.zip to http://${env.endpoint.host}/${env.bucket}/${object}\\nCreated cache$`));
    const head = await client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: object }));
    expect(head.Metadata).toEqual({ cachekey: 'deps' });
    expect(head.ContentType).toBe('application/octet-stream');

    const reader = await job({}, project);
    await restoreCache(reader, cacheOptions(cacheB, reader.build, { config: config() }));
    expect(text(reader)).toMatch(/^Checking cache for deps\.\.\.\nDownloaded cache from http:\/\/[^?\s]+\/deps {2}ETag="[0-9a-f]+" \([\d.]+ MB\)\nRestored cache "deps": 3 entries/);
    expect(await readFile(join(reader.projectDir, 'vendor/lib/a.js'), 'utf8')).toBe('from runner A');
    // The local copy is kept beside the remote one, dated like the object: the next restore takes it as it is.
    const local = localCacheFile(cacheB, reader.build, 'deps')!;
    expect((await stat(local)).mtime.getTime()).toBe(head.LastModified?.getTime());
    const again = await job({}, project);
    await restoreCache(again, cacheOptions(cacheB, again.build, { config: config() }));
    expect(text(again)).toMatch(/^Checking cache for deps\.\.\.\ncache\.zip is up to date\nRestored cache "deps"/);
  });

  it('asks the bucket for its region when BucketLocation is empty (radosgw answers its zonegroup)', async () => {
    const writer = await job({ 'vendor/a': 'region' });
    await archiveCache(writer, cacheOptions(await tempDir(), writer.build, { config: config({ s3: { BucketLocation: '' } }) }));
    expect(writer.lines.at(-1)).toBe('Created cache');
    await client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: `${prefix}/runner/abcdefghi/project/${writer.build.project_id}/deps` }));
  });

  it('puts a Shared cache under project/<id>/ without the runner part', async () => {
    const writer = await job({ 'vendor/a': 'shared' });
    await archiveCache(writer, cacheOptions(await tempDir(), writer.build, { config: config({ cache: { Shared: true } }) }));
    await client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: `${prefix}/project/${writer.build.project_id}/deps` }));
  });

  it('restores a cache GitLab Runner wrote (its zip layout, under its name), and GitLab Runner\'s reader gets ours as a plain zip', async () => {
    const source = await tempDir();
    await writeFiles(source, { 'vendor/pkg/index.js': 'gitlab-runner made this', 'vendor/.keep': '' });
    await symlink('pkg/index.js', join(source, 'vendor/main.js'));
    const zip = join(await tempDir(), 'cache.zip');
    await execa('zip', ['-q', '-r', '--symlinks', zip, 'vendor'], { cwd: source });
    const reader = await job();
    const object = `${prefix}/runner/abcdefghi/project/${reader.build.project_id}/deps`;
    await client.send(new PutObjectCommand({ Bucket: env.bucket, Key: object, Body: await readFile(zip), ContentType: 'application/octet-stream', Metadata: { cachekey: 'deps' } }));
    await restoreCache(reader, cacheOptions(await tempDir(), reader.build, { config: config() }));
    expect(text(reader)).toMatch(/Successfully extracted cache$/);
    expect(await treeOf(reader.projectDir)).toMatchObject({ 'vendor/.keep': 'file:644:', 'vendor/main.js': 'link:pkg/index.js', 'vendor/pkg/index.js': 'file:644:gitlab-runner made this' });

    // What we upload is GitLab Runner's format: a zip of paths relative to the project dir.
    const writer = await job({ 'vendor/x/y.txt': 'ours' });
    await archiveCache(writer, cacheOptions(await tempDir(), writer.build, { config: config() }));
    const got = await client.send(new GetObjectCommand({ Bucket: env.bucket, Key: `${prefix}/runner/abcdefghi/project/${writer.build.project_id}/deps` }));
    const downloaded = join(await tempDir(), 'got.zip');
    await writeFile(downloaded, Buffer.from(await got.Body!.transformToByteArray()));
    expect((await execa('unzip', ['-Z1', downloaded])).stdout.split('\n')).toEqual(['vendor/', 'vendor/x/', 'vendor/x/y.txt']);
  });

  it('says "file does not exist" for a missing object and tries the fallback keys', async () => {
    const seed = await job({ 'vendor/from-main': 'main' }, undefined, { key: 'main', paths: ['vendor/'] });
    await archiveCache(seed, cacheOptions(await tempDir(), seed.build, { config: config() }));
    const ctx = await job({}, seed.build.project_id, { key: 'feature', paths: ['vendor/'], fallback_keys: ['main'] });
    await restoreCache(ctx, cacheOptions(await tempDir(), ctx.build, { config: config() }));
    expect(text(ctx)).toMatch(/^Checking cache for feature\.\.\.\nWARNING: file does not exist\nWARNING: Failed to extract cache\nChecking cache for main\.\.\.\nDownloaded cache from/);
    expect(await readFile(join(ctx.projectDir, 'vendor/from-main'), 'utf8')).toBe('main');
  });

  it('keeps an archive over MaxUploadedArchiveSize local, with GitLab Runner\'s line', async () => {
    const ctx = await job({ 'vendor/big.bin': randomBytes(64 * 1024).toString('hex') });
    const cacheDir = await tempDir();
    await archiveCache(ctx, cacheOptions(cacheDir, ctx.build, { config: config({ cache: { MaxUploadedArchiveSize: 1000 } }) }));
    const size = (await stat(localCacheFile(cacheDir, ctx.build, 'deps')!)).size;
    expect(text(ctx)).toContain(`Cache archive size (${size}) is too big (Limit is set to 1000). Cache will be stored only locally.\nCreated cache`);
    await expect(client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: `${prefix}/runner/abcdefghi/project/${ctx.build.project_id}/deps` }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  it('goes on with a warning under wrong credentials, and no secret reaches the log', async () => {
    const wrong = config({ s3: { SecretKey: 'not-the-secret-key' } });
    const writer = await job({ 'vendor/a': 'a' });
    const cacheDir = await tempDir();
    await archiveCache(writer, cacheOptions(cacheDir, writer.build, { config: wrong }));
    expect(text(writer)).toMatch(/WARNING: http:\/\/[^?\s]+\/deps: received: 403 Forbidden\. Request failed with code: SignatureDoesNotMatch.*\nWARNING: Failed to create cache$/);
    // The archive was made and stays as the local copy.
    expect((await stat(localCacheFile(cacheDir, writer.build, 'deps')!)).isFile()).toBe(true);
    const reader = await job({}, writer.build.project_id);
    await restoreCache(reader, cacheOptions(await tempDir(), reader.build, { config: wrong }));
    expect(text(reader)).toMatch(/WARNING: .*received: 403 Forbidden.*\nWARNING: Failed to extract cache$/);
    for (const line of [...writer.lines, ...reader.lines]) {
      expect(line).not.toMatch(/X-Amz-Signature|X-Amz-Credential|not-the-secret-key|CIRUNNERS3TESTKEY/);
    }
  });

  it('retries an unreachable store twice, then warns; the job is not held', async () => {
    const closed = await freePort();
    const unreachable = config({ s3: { ServerAddress: `127.0.0.1:${closed}` } });
    const ctx = await job({ 'vendor/a': 'a' });
    const started = Date.now();
    await archiveCache(ctx, cacheOptions(await tempDir(), ctx.build, { config: unreachable }));
    expect(text(ctx).match(/WARNING: Retrying\.\.\./g)).toHaveLength(2);
    expect(text(ctx)).toMatch(/WARNING: http:\/\/127\.0\.0\.1:\d+\/[^?\s]+: .*ECONNREFUSED.*\nWARNING: Failed to create cache$/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('refuses a hostile archive in the store whole, and warns about a truncated one', async () => {
    const hostile = await job({ 'src/main.c': 'mine' });
    const name = (id: number): string => `${prefix}/runner/abcdefghi/project/${id}/deps`;
    await client.send(new PutObjectCommand({ Bucket: env.bucket, Key: name(hostile.build.project_id), Body: buildArchive('zip', [{ name: 'vendor/ok', file: 'ok' }, { name: 'vendor/out', symlink: '../../../etc' }]) }));
    const before = await treeOf(hostile.projectDir);
    await restoreCache(hostile, cacheOptions(await tempDir(), hostile.build, { config: config() }));
    expect(text(hostile)).toMatch(/WARNING: refusing the whole archive, nothing was extracted.*\nWARNING: Failed to extract cache$/);
    expect(await treeOf(hostile.projectDir)).toEqual(before);

    const truncated = await job();
    const whole = buildArchive('zip', [{ name: 'vendor/a.txt', file: 'x'.repeat(5000) }]);
    await client.send(new PutObjectCommand({ Bucket: env.bucket, Key: name(truncated.build.project_id), Body: whole.subarray(0, whole.length - 30) }));
    await restoreCache(truncated, cacheOptions(await tempDir(), truncated.build, { config: config() }));
    expect(text(truncated)).toMatch(/WARNING: .*not a readable zip archive.*\nWARNING: Failed to extract cache$/);
    expect(await treeOf(truncated.projectDir)).toEqual({});
  });
});

/** A loopback port nothing listens on (taken, then released). */
async function freePort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

