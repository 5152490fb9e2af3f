/**
 * The real S3 the cache tests use: the Ceph RADOS Gateway kit beside the checkout (../shared/s3; .ci/run
 * brings it up and exports S3_ENDPOINT, S3_ACCESS_KEY, …). Without those variables the kit's `up.sh`
 * is asked (idempotent: 0.1 s when it is up). Where there is no S3 the tests skip saying why, except
 * under CI=true, where that is a failure (as the kubernetes tests do).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { CacheConfig } from '../../src/cache/index.js';
import { cacheSchema } from '../../src/agent/config/cache-schema.js';

const run = promisify(execFile);
const KIT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../shared/s3');

export interface S3Env {
  endpoint: URL;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

/** The S3 server, or why there is none. */
async function locate(): Promise<S3Env | string> {
  let env: Record<string, string | undefined> = process.env;
  if (!env.S3_ENDPOINT) {
    if (!existsSync(join(KIT, 'up.sh'))) return `no S3: S3_ENDPOINT is not set and the kit is not at ${KIT}`;
    if (process.getuid?.() !== 0) return 'no S3: S3_ENDPOINT is not set and the kit needs root';
    try {
      const line = (await run('bash', [join(KIT, 'up.sh')], { timeout: 5 * 60_000 })).stdout.trim().split('\n').pop() ?? '';
      env = Object.fromEntries(line.split(/\s+/).map((pair) => pair.split('=', 2) as [string, string]));
    } catch (error) {
      return `no S3: the kit did not come up: ${(error as Error).message.split('\n').slice(-3).join(' ')}`;
    }
  }
  const { S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET, S3_REGION } = env;
  if (!S3_ENDPOINT || !S3_ACCESS_KEY || !S3_SECRET_KEY || !S3_BUCKET) return 'no S3: S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and S3_BUCKET must all be set';
  return { endpoint: new URL(S3_ENDPOINT), accessKey: S3_ACCESS_KEY, secretKey: S3_SECRET_KEY, bucket: S3_BUCKET, region: S3_REGION ?? 'us-east-1' };
}

const result = await locate();
if (typeof result === 'string') {
  if (process.env.CI === 'true') throw new Error(`S3 tests cannot run under CI: ${result}`);
  console.log(`S3 tests skipped: ${result}`);
}
/** Set when the S3 tests must skip (why). */
export const skipS3 = typeof result === 'string' ? result : undefined;
/** The S3 server (undefined when skipped). */
export const s3 = typeof result === 'string' ? undefined : result;

/** `[runners.cache]` for the kit's S3, as a GitLab Runner config.toml would give it (path-style, http). */
export function s3CacheConfig(env: S3Env, extra: { cache?: Record<string, unknown>; s3?: Record<string, unknown> } = {}): CacheConfig {
  return cacheSchema.parse({
    Type: 's3',
    ...extra.cache,
    s3: { ServerAddress: env.endpoint.host, AccessKey: env.accessKey, SecretKey: env.secretKey, BucketName: env.bucket, BucketLocation: env.region, Insecure: env.endpoint.protocol === 'http:', ...extra.s3 },
  });
}

/** The same as config.toml text, for tests that start a runner process. */
export function s3CacheToml(env: S3Env, extra = ''): string {
  return [
    '  [runners.cache]',
    '    Type = "s3"',
    ...extra.split('\n').filter((line) => line.trim() !== '').map((line) => `    ${line.trim()}`),
    '    [runners.cache.s3]',
    `      ServerAddress = "${env.endpoint.host}"`,
    `      AccessKey = "${env.accessKey}"`,
    `      SecretKey = "${env.secretKey}"`,
    `      BucketName = "${env.bucket}"`,
    `      BucketLocation = "${env.region}"`,
    `      Insecure = ${env.endpoint.protocol === 'http:'}`,
    '',
  ].join('\n');
}
