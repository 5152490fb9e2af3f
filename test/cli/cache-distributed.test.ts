/**
 * The distributed cache end to end with real runner processes (`run-once -c config.toml -r NAME` from
 * dist/): two runners with their own builds and cache dirs share one cache through S3 (Ceph radosgw)
 * and through Azure (Azurite, reached over https through a proxy with a private CA), configured as a
 * GitLab Runner config.toml configures it. Neither runner's output nor the job logs show a secret, nor
 * does the job's environment or any command line on the machine (`ps`) while the cache moves.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AZURITE_ACCOUNT, AZURITE_DOMAIN, AZURITE_KEY, startAzurite, type Azurite } from '../helpers/azurite.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { logText } from '../helpers/log-text.js';
import { s3, s3CacheToml, skipS3 } from '../helpers/s3.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
useTestServer((server) => {
  t = server;
});

const SECRETS = /X-Amz-Signature|X-Amz-Credential|sig=[A-Za-z0-9%]|ciRunnerS3TestSecretKey|Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1/;

/** Runs the save job on one runner and the load job on another; both share `[runners.cache]` (`cacheToml`). */
async function shareThroughStore(cacheToml: string, extra: { tlsCa?: string; env?: Record<string, string> } = {}): Promise<{ save: string; load: string; outputs: string[] }> {
  const tag = randomBytes(3).toString('hex');
  const key = `shared-${tag}`;
  const p = await t.pipeline(`stages: [build, test]
save:
  stage: build
  tags: [save-${tag}]
  cache: { key: ${key}, paths: [vendor/] }
  script:
    - mkdir -p vendor/lib && echo "made by runner A" > vendor/lib/dep.txt
    # What a job can see of the runner: its environment and every command line on the machine.
    - env | sort
    - ps -eo args
load:
  stage: test
  tags: [load-${tag}]
  cache: { key: ${key}, paths: [vendor/], policy: pull }
  script:
    - cat vendor/lib/dep.txt
    - test "$(cat vendor/lib/dep.txt)" = "made by runner A"
`);
  const outputs: string[] = [];
  for (const [name, jobTag] of [['A', `save-${tag}`], ['B', `load-${tag}`]] as const) {
    const { token } = await t.registerRunner({ tags: [jobTag] });
    const dirs = await workDirs();
    const config = join(dirs.root, 'config.toml');
    await writeFile(config, `concurrent = 1

[[runners]]
  name = "${name}"
  url = "${t.url}"
  token = "${token}"
  executor = "shell"
  shell = "sh"
  builds_dir = "${dirs.builds}"
  cache_dir = "${dirs.cache}"
${extra.tlsCa ? `  tls-ca-file = "${extra.tlsCa}"\n` : ''}${cacheToml}`);
    // A shell job inherits the runner's environment: the test run's own S3 variables are not the runner's to pass on.
    const run = await cli(['run-once', '-c', config, '-r', name, '--wait-timeout', '30s'], { env: { S3_ACCESS_KEY: '', S3_SECRET_KEY: '', ...extra.env } });
    expect(run.exitCode, String(run.all)).toBe(0);
    outputs.push(String(run.all));
    // Runner B's cache dir holds the copy it downloaded, where GitLab Runner would keep it.
    if (name === 'B') expect(await readFile(join(dirs.cache, 'group/project', key, 'cache.zip'))).toBeTruthy();
  }
  const [save, load] = p.jobs;
  await t.waitForJob(load!.id, (job) => job.status === 'success' || job.status === 'failed');
  const traces = await Promise.all([save!, load!].map(async (job) => logText(await t.server.getTrace(job.id))));
  expect(t.server.getJob(load!.id)?.status, traces[1]).toBe('success');
  return { save: traces[0]!, load: traces[1]!, outputs };
}

describe.skipIf(skipS3)('two runner processes share a cache through S3', () => {
  it('saves on one, restores on the other (Shared, under a Path)', async () => {
    const path = `ci-runner-cli-${randomBytes(3).toString('hex')}`;
    const { save, load, outputs } = await shareThroughStore(s3CacheToml(s3!, `Shared = true\nPath = "${path}"`));
    expect(save).toMatch(new RegExp(`Uploading cache\\.zip to http://${s3!.endpoint.host}/${s3!.bucket}/${path}/project/\\d+/shared-\\w+`));
    expect(load).toMatch(/Checking cache for shared-\w+\.\.\.\nDownloaded cache from http:\/\/[^?\s]+ .*\nRestored cache/);
    expect(load).toContain('made by runner A');
    for (const text of [save, load, ...outputs]) expect(text).not.toMatch(SECRETS);
  }, 120_000);
});

describe('two runner processes share a cache through Azure (Azurite)', () => {
  let pki: Pki;
  let azurite: Azurite;
  const container = `cli-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    pki = await createPki();
    azurite = await startAzurite(pki);
    await azurite.createContainer(container);
  }, 120_000);
  afterAll(async () => azurite?.stop());

  it('saves on one, restores on the other, through the proxy, trusting the runner\'s tls-ca-file', async () => {
    await mkdir(pki.dir, { recursive: true });
    const toml = `  [runners.cache]
    Type = "azure"
    Shared = true
    [runners.cache.azure]
      AccountName = "${AZURITE_ACCOUNT}"
      AccountKey = "${AZURITE_KEY}"
      ContainerName = "${container}"
      StorageDomain = "${AZURITE_DOMAIN}"
`;
    const { save, load, outputs } = await shareThroughStore(toml, { tlsCa: pki.caCert, env: { HTTPS_PROXY: azurite.proxy.url } });
    expect(save).toMatch(new RegExp(`Uploading cache\\.zip to https://${AZURITE_ACCOUNT}\\.${AZURITE_DOMAIN}/${container}/project/\\d+/shared-\\w+`));
    expect(load).toContain('made by runner A');
    expect(azurite.proxy.tunnels.length).toBeGreaterThanOrEqual(2);
    for (const text of [save, load, ...outputs]) expect(text).not.toMatch(SECRETS);
  }, 120_000);
});
