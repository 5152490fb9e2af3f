/**
 * The `cache-extractor` helper command choosing between a key's two names (FF_HASH_CACHE_KEYS on and
 * off) as GitLab Runner 19's does: `--alternate-url` when the primary has no object or the alternate's
 * is newer, dated by `--head-url`/`--alternate-head-url` (signed HEADs) when given, else by a one-byte
 * GET of the signed URLs. Against the real S3 kit; the archives go up with the `cache-archiver` helper.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3, skipS3 } from '../helpers/s3.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

const prefix = `ci-runner-test-extractor-${randomBytes(4).toString('hex')}`;
let client: S3Client | undefined;

beforeAll(() => {
  if (!s3) return;
  client = new S3Client({ endpoint: s3.endpoint.origin, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
});
afterAll(async () => {
  if (!client || !s3) return;
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}/` }));
  for (const object of listed.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object.Key }));
  client.destroy();
});

const sign = (command: GetObjectCommand | HeadObjectCommand | PutObjectCommand): Promise<string> => getSignedUrl(client!, command, { expiresIn: 600 });
const get = (key: string): Promise<string> => sign(new GetObjectCommand({ Bucket: s3!.bucket, Key: `${prefix}/${key}` }));
const head = (key: string): Promise<string> => sign(new HeadObjectCommand({ Bucket: s3!.bucket, Key: `${prefix}/${key}` }));

/** Archives `vendor/a` holding `content` and uploads it as `key` with the archiver helper. */
async function upload(key: string, content: string): Promise<void> {
  const dirs = await workDirs();
  await mkdir(join(dirs.root, 'vendor'), { recursive: true });
  await writeFile(join(dirs.root, 'vendor', 'a'), content);
  const url = await sign(new PutObjectCommand({ Bucket: s3!.bucket, Key: `${prefix}/${key}` }));
  const result = await cli(['cache-archiver', '--file', join(dirs.root, 'cache.zip'), '--path', 'vendor/', '--url', url], { cwd: dirs.root });
  expect(result.exitCode, result.all).toBe(0);
}

/** Runs the extractor in a fresh dir with `args`; its output and what it extracted. */
async function extract(args: string[]): Promise<{ output: string; content: string | undefined }> {
  const dirs = await workDirs();
  const result = await cli(['cache-extractor', '--file', join(dirs.root, 'local', 'cache.zip'), ...args], { cwd: dirs.root });
  expect(result.exitCode, result.all).toBe(0);
  return { output: result.all, content: await readFile(join(dirs.root, 'vendor', 'a'), 'utf8').catch(() => undefined) };
}

describe.skipIf(skipS3)('cache-extractor with --alternate-url', () => {
  it('takes the newer of the two objects, dated by the signed GETs or by the HEAD URLs, and the alternate when the primary is missing', async () => {
    await upload('older', 'older');
    // Last-Modified counts whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await upload('newer', 'newer');

    const byGet = await extract(['--url', await get('older'), '--alternate-url', await get('newer')]);
    expect(byGet.output).toContain('Selecting alternate cache URL: newer timestamp');
    expect(byGet.content).toBe('newer');

    const byHead = await extract(['--url', await get('older'), '--head-url', await head('older'), '--alternate-url', await get('newer'), '--alternate-head-url', await head('newer')]);
    expect(byHead.output).toContain('Selecting alternate cache URL: newer timestamp');
    expect(byHead.content).toBe('newer');

    const primaryNewer = await extract(['--url', await get('newer'), '--alternate-url', await get('older')]);
    expect(primaryNewer.output).not.toContain('Selecting alternate');
    expect(primaryNewer.content).toBe('newer');

    const primaryMissing = await extract(['--url', await get('missing'), '--alternate-url', await get('older')]);
    expect(primaryMissing.output).toContain('Selecting alternate cache URL: primary not available');
    expect(primaryMissing.content).toBe('older');
  });
});
