/**
 * The distributed cache across executors: a shell job saves a cache through S3 (Ceph radosgw) and a
 * kubernetes job of the same project restores it into its pod. The runner moves caches for pods (the
 * pod needs no route to the store, nor its credentials): restored into the runner's copy of the
 * project, carried into the pod with the checkout, and saved from what comes back.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { defaultServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { logText } from '../../helpers/log-text.js';
import { runOnce } from '../../helpers/run-once.js';
import { s3, skipS3 } from '../../helpers/s3.js';
import type { TestServer } from '../../helpers/server.js';
import { skipKubernetes } from './cluster.js';
import { runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-cache');

describe.skipIf(skipKubernetes || skipS3)('a cache shared by a shell job and a kubernetes job through S3', () => {
  it('restores in the pod what the shell job saved, and saves what the pod changed', async () => {
    const path = `ci-runner-k8s-${randomBytes(3).toString('hex')}`;
    const cache = {
      Type: 's3', Path: path,
      s3: { ServerAddress: s3!.endpoint.host, AccessKey: s3!.accessKey, SecretKey: s3!.secretKey, BucketName: s3!.bucket, BucketLocation: s3!.region, Insecure: true },
    };
    const yaml = [
      'stages: [build, test, check]',
      'save:',
      '  stage: build',
      '  cache: { key: deps, paths: [vendor/] }',
      '  script: [mkdir -p vendor, echo "saved by the shell job" > vendor/dep.txt]',
      'load:',
      '  stage: test',
      '  cache: { key: deps, paths: [vendor/] }',
      '  script: [cat vendor/dep.txt, echo "and the pod" >> vendor/dep.txt]',
      'check:',
      '  stage: check',
      '  cache: { key: deps, paths: [vendor/], policy: pull }',
      '  script: [cat vendor/dep.txt]',
      '',
    ].join('\n');
    const p = await t.pipeline(yaml);
    const never = new AbortController().signal;
    const shell = async (): Promise<string> => {
      const dirs = await workDirs();
      const runner = runnerSchema.parse({ name: 'shell', url: t.url, token, executor: 'shell', shell: 'sh', builds_dir: dirs.builds, cache_dir: dirs.cache, cache });
      const result = await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
      expect(result.kind).toBe('job');
      return logText(await t.server.getTrace(result.kind === 'job' ? result.buildId : 0));
    };
    const saved = await shell();
    expect(saved).toMatch(new RegExp(`Uploading cache\\.zip to http://[^\\s]+/${path}/runner/\\w+/project/\\d+/deps`));

    const pod = await runKubernetesJob(t, token, { pipeline: p, job: 1 }, { namespace, runner: { cache } });
    expect(pod.status, pod.trace).toBe('success');
    expect(pod.trace).toMatch(/Checking cache for deps\.\.\.\nDownloaded cache from http:\/\/[^?\s]+ /);
    expect(pod.trace).toContain('saved by the shell job');
    expect(pod.trace).toMatch(/Creating cache deps\.\.\.\n(.*\n)*Uploading cache\.zip to /);

    const checked = await shell();
    expect(checked).toContain('saved by the shell job\nand the pod');
  }, 240_000);
});
