/**
 * A 50 MB source tree through exec, which before Kubernetes 1.29 cannot say where its input ends: the
 * checkout arrives in the pod byte for byte, and a large file the build makes comes back for the
 * artifacts, intact.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { skipKubernetes } from './cluster.js';
import { runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

/** 50 files of 1 MB of random text (git stores it as it is: nothing repeats). */
const files: Record<string, string> = {};
for (let i = 0; i < 50; i += 1) files[`tree/part-${String(i).padStart(2, '0')}.txt`] = randomBytes(786_432).toString('base64');
const treeHash = createHash('md5')
  .update(Object.keys(files).sort().map((name) => files[name]).join(''))
  .digest('hex');

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
}, files);

const namespace = await useNamespace('ci-runner-test-large');

describe.skipIf(skipKubernetes)('kubernetes executor: a 50 MB tree', () => {
  it('streams a 50 MB checkout into the pod intact and brings a 50 MB build output back for the artifacts', async () => {
    const yaml = [
      'stages: [make, check]',
      'make:',
      '  stage: make',
      '  script:',
      '    - du -sk tree',
      '    - echo "tree $(cat $(ls tree/* | sort) | md5sum | cut -d" " -f1)"',
      '    - head -c 50000000 /dev/urandom > out.bin',
      '    - echo "made $(md5sum < out.bin | cut -d" " -f1)"',
      '  artifacts:',
      '    paths: [out.bin]',
      'check:',
      '  stage: check',
      '  variables:',
      '    GIT_STRATEGY: none',
      '  script:',
      '    - echo "got $(md5sum < out.bin | cut -d" " -f1)"',
      '',
    ].join('\n');
    const make = await runKubernetesJob(t, token, yaml, { namespace, runner: { output_limit: 16384 } });
    expect(make.status, make.trace).toBe('success');
    expect(make.trace).toContain(`tree ${treeHash}`);
    expect(Number(/^(\d+)\s+tree$/m.exec(make.trace)?.[1])).toBeGreaterThan(50_000);
    const made = /made ([0-9a-f]{32})/.exec(make.trace)?.[1];
    expect(made).toBeDefined();
    const check = await runKubernetesJob(t, token, { pipeline: make.pipeline, job: 1 }, { namespace });
    expect(check.status, check.trace).toBe('success');
    expect(check.trace).toContain(`got ${made}`);
  }, 300_000);
});
