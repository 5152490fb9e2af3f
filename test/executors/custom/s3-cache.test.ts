/**
 * The custom executor with a distributed cache in the real S3 kit (Ceph radosgw; `export $(cat
 * /tmp/s3-env)`): the path of a driver in a VM. The runner signs the URLs; the stage scripts in the
 * driver's environment call `gitlab-runner cache-archiver --url <signed PUT> --header …` and
 * `cache-extractor --url <signed GET>` — here ci-runner's own helper commands (dist/cli/main.js,
 * build first) — so the archive goes from the driver's side to S3 and back to another driver whose
 * local cache is empty. The store's credentials never reach the driver's environment.
 */
import { DeleteObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { defaultServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { shortToken } from '../../../src/util/short-token.js';
import { workDirs } from '../../cli/helpers.js';
import { logText } from '../../helpers/log-text.js';
import { runOnce } from '../../helpers/run-once.js';
import { s3, skipS3 } from '../../helpers/s3.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { customTable, writeDrivers, type Drivers } from './drivers.js';

/** Every object of this file lives under this Path, removed at the end. */
const prefix = `ci-runner-custom-${randomBytes(4).toString('hex')}`;
let t: TestServer;
let token: string;
let client: S3Client | undefined;

beforeAll(async () => {
  if (!s3) return;
  client = new S3Client({ endpoint: s3.endpoint.origin, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  t = await startTestServer({ files: { 'README.md': '# s3 cache\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t?.close();
  if (!client || !s3) return;
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}/` }));
  for (const object of listed.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object.Key }));
  client.destroy();
});

/** Runs the next job with fresh drivers, whose builds and cache dirs are their own. */
async function runJob(jobId: number): Promise<{ drivers: Drivers; cacheDir: string; status: string; trace: string }> {
  const env = s3!;
  const d = await workDirs();
  const drivers = await writeDrivers(d.root);
  const cache = { Type: 's3', Path: prefix, s3: { ServerAddress: env.endpoint.host, AccessKey: env.accessKey, SecretKey: env.secretKey, BucketName: env.bucket, BucketLocation: env.region, Insecure: env.endpoint.protocol === 'http:' } };
  const runner = runnerSchema.parse({ name: 'custom-s3', url: t.url, token, api: 'v4', executor: 'custom', builds_dir: d.builds, cache_dir: d.cache, cache, custom: customTable(drivers) });
  const never = new AbortController().signal;
  await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const job = await t.waitForJob(jobId, (j) => j.status === 'success' || j.status === 'failed');
  return { drivers, cacheDir: join(d.root, 'driver-cache'), status: job.status, trace: logText(await t.server.getTrace(jobId)) };
}

describe.skipIf(skipS3)('custom executor: the distributed cache in S3 through the helper commands', () => {
  it('archives on one driver\'s side to S3 and extracts on another\'s, with signed URLs only', async () => {
    const p = await t.pipeline(`
stages: [build, test]
writer:
  stage: build
  cache: { key: deps, paths: [vendor/] }
  script:
    - mkdir -p vendor && echo "cached through S3" > vendor/lib.txt
reader:
  stage: test
  cache: { key: deps, paths: [vendor/], policy: pull }
  script:
    - cat vendor/lib.txt
`);
    const [writerJob, readerJob] = p.jobs;
    const writer = await runJob(writerJob!.id);
    expect(writer.status, writer.trace).toBe('success');
    expect(writer.trace).toContain('Created cache');
    // Project 1: the test server's first.
    const object = `${prefix}/runner/${shortToken(token)}/project/1/deps`;
    const head = await client!.send(new HeadObjectCommand({ Bucket: s3!.bucket, Key: object }));
    expect(head.ContentLength).toBeGreaterThan(0);
    expect(head.Metadata).toEqual({ cachekey: 'deps' });

    const reader = await runJob(readerJob!.id);
    expect(reader.status, reader.trace).toBe('success');
    // The reader's driver had no local archive: the cache came from S3 (the helper keeps a copy where --file says).
    expect(reader.trace).toContain('Successfully extracted cache');
    expect(reader.trace).toContain('cached through S3');
    expect(await readdir(reader.cacheDir, { recursive: true })).toContainEqual(expect.stringMatching(/deps\/cache\.zip$/));
    // The job's side (its variables, its scripts' arguments) never had the store's secret: only signed URLs.
    for (const { drivers } of [writer, reader]) {
      for (const call of ['config', 'prepare', 'run', 'cleanup']) {
        const jobSide = (await drivers.read(`env-${call}`)).split('\n').filter((line) => line.startsWith('CUSTOM_ENV_') || line.startsWith('args='));
        expect(jobSide.join('\n')).not.toContain(s3!.secretKey);
      }
    }
  });
});
