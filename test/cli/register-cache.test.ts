import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.close());

describe('register --cache-* (GitLab Runner 19\'s flags and environment names)', () => {
  it('writes [runners.cache] and its store table from flags and the environment, as the loader reads them', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli([
      'register', '-c', config, '-n', '--url', t.url, '--registration-token', t.server.registrationToken, '--name', 'cached',
      '--cache-type', 's3', '--cache-shared', '--cache-path', 'ci', '--cache-max_uploaded_archive_size', '1048576',
      '--cache-s3-server-address', 's3.example.com:9000', '--cache-s3-bucket-name', 'runner-cache', '--cache-s3-authentication_type', 'access-key', '--cache-s3-path-style',
    ], { env: { CACHE_S3_ACCESS_KEY: 'AKIAEXAMPLE', CACHE_S3_SECRET_KEY: 'secret-from-env', CACHE_S3_BUCKET_LOCATION: 'eu-west-1' } });
    expect(reg.exitCode, reg.all).toBe(0);
    const text = await readFile(config, 'utf8');
    expect(text).toMatch(/\[runners\.cache\]\n(.*\n)*\s+\[runners\.cache\.s3\]/);
    const cache = parseConfig(text, config).config.runners[0]?.cache;
    expect(cache).toMatchObject({ Type: 's3', Shared: true, Path: 'ci', MaxUploadedArchiveSize: 1048576 });
    expect(cache?.s3).toMatchObject({ ServerAddress: 's3.example.com:9000', BucketName: 'runner-cache', BucketLocation: 'eu-west-1', AccessKey: 'AKIAEXAMPLE', SecretKey: 'secret-from-env', AuthenticationType: 'access-key', PathStyle: true });
    expect(reg.all).not.toContain('secret-from-env');
  });

  it('refuses a value the config loader would refuse, naming the flag, before registering', async () => {
    const { root } = await workDirs();
    const reg = await cli(['register', '-c', join(root, 'config.toml'), '-n', '--url', t.url, '--registration-token', t.server.registrationToken, '--cache-type', 'ftp']);
    expect(reg.exitCode).toBe(2);
    expect(reg.all).toMatch(/--cache-type: "s3", "azure" or "gcs"/);
    const bad = await cli(['register', '-c', join(root, 'config.toml'), '-n', '--url', t.url, '--registration-token', t.server.registrationToken, '--cache-type', 'azure'], { env: { CACHE_AZURE_ACCOUNT_NAME: 'acct', CACHE_MAXIMUM_UPLOADED_ARCHIVE_SIZE: 'lots' } });
    expect(bad.exitCode).toBe(2);
    expect(bad.all).toMatch(/--cache-max_uploaded_archive_size: /);
  });
});

describe('the --cache-* flag table', () => {
  it('has every flag of GitLab Runner 19.3\'s cache config, with its environment name', async () => {
    const { CACHE_FLAGS } = await import('../../src/cli/cache-flags.js');
    // The `long:` and `env:` tags of cache/cacheconfig at v19.3.0, under the `cache` namespace.
    const theirs = JSON.parse(await readFile(new URL('../fixtures/gitlab-runner-19.3-cache-flags.json', import.meta.url), 'utf8')) as Array<{ flag: string; env: string }>;
    expect(CACHE_FLAGS.map((f) => ({ flag: f.flag, env: f.env }))).toEqual(theirs);
  });
});
