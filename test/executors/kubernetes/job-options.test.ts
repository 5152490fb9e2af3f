/**
 * What a v4 job says about its pod, on the kit's real cluster: the job's get_sources hooks run in the
 * pod's build container (the pre hook before the checkout arrives, the runner's own scripts on the
 * runner), the image's and a service's `kubernetes: user` as runAsUser/runAsGroup, a service's own
 * variables, several aliases.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { waitUntil } from '../../cli/helpers.js';
import { cluster, K8S_IMAGES, labelled, skipKubernetes } from './cluster.js';
import { runKubernetesJob, startKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
let scratch: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-k8s-opts-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const namespace = await useNamespace('ci-runner-test-job-options');

describe.skipIf(skipKubernetes)('kubernetes: what the job asks of its pod', () => {
  it('runs the job\'s hooks in the pod, the pre hook before the checkout, the runner\'s scripts on the runner', async () => {
    const jobMarker = join(scratch, 'job-hook-ran');
    const yaml = [
      'j:',
      '  hooks:',
      '    pre_get_sources_script:',
      `      - mkdir -p ${scratch} && touch ${jobMarker} && echo "job-hook as $(id -u) readme=$(cat /builds/group/project/README.md 2>/dev/null || echo none)"`,
      '  script:',
      '    - cat README.md',
      '',
    ].join('\n');
    const run = await runKubernetesJob(t, token, yaml, { namespace, runner: { pre_get_sources_script: `touch ${join(scratch, 'runner-pre-ran')}` } });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('job-hook as 0 readme=none');
    expect(run.trace).toContain('# p');
    expect(existsSync(jobMarker)).toBe(false);
    expect(existsSync(join(scratch, 'runner-pre-ran'))).toBe(true);
  });

  it('runs the build and a service as their kubernetes: user, the service with its own variables and aliases', async () => {
    const yaml = [
      'j:',
      '  image:',
      `    name: ${K8S_IMAGES.sh}`,
      '    kubernetes:',
      '      user: "1000:1001"',
      '  services:',
      `    - name: ${K8S_IMAGES.sh}`,
      '      alias: one,two',
      '      kubernetes:',
      '        user: "1002"',
      '      variables:',
      '        SVC_OWN: "for-$CI_JOB_NAME"',
      '      entrypoint: ["sh", "-c"]',
      '      command: ["echo \\"uid=$(id -u) own=$SVC_OWN\\" > /tmp/who; httpd -f -p 8080 -h /tmp"]',
      '  script:',
      '    - echo "build $(id -u):$(id -g)"',
      '    - for host in one two; do sleep 1; wget -q -O - http://$host:8080/who; done',
      '',
    ].join('\n');
    const run = await runKubernetesJob(t, token, yaml, { namespace });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('build 1000:1001');
    expect(run.trace.match(/uid=1002 own=for-j/g)).toHaveLength(2);
  });

  it('gives the pod an image pull secret with DOCKER_AUTH_CONFIG\'s logins', async () => {
    const login = { auths: { 'registry.example.test': { username: 'puller', password: 'pull-secret-xyz' } } };
    const job = await startKubernetesJob(t, token, 'j:\n  script:\n    - sleep 3\n', { namespace, variables: { DOCKER_AUTH_CONFIG: JSON.stringify(login) } });
    let config: unknown;
    await waitUntil(async () => {
      const { pods, secrets } = await labelled(cluster!.core, namespace, token, job.id);
      const pod = pods[0] ? await cluster!.core.readNamespacedPod({ name: pods[0], namespace }) : undefined;
      const pullSecret = pod?.spec?.imagePullSecrets?.[0]?.name;
      if (!pullSecret || !secrets.includes(pullSecret)) return false;
      const secret = await cluster!.core.readNamespacedSecret({ name: pullSecret, namespace });
      config = JSON.parse(Buffer.from(secret.data?.['.dockerconfigjson'] ?? '', 'base64').toString('utf8'));
      return true;
    }, 60_000, 'the job pod and its pull secret');
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(config).toEqual({ auths: { 'registry.example.test': { auth: Buffer.from('puller:pull-secret-xyz').toString('base64') } } });
    expect(trace).toContain('Authenticating with credentials from $DOCKER_AUTH_CONFIG for registry.example.test');
    expect(trace).not.toContain('pull-secret-xyz');
  });
});
