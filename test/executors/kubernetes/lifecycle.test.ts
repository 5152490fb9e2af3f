/**
 * A kubernetes job's life around its script: secrets that stay out of the pod spec, cancel and
 * timeout that stop the script and delete the pod, pods that cannot start failing the job with
 * Kubernetes' own reason within poll_timeout, and images with an ENTRYPOINT or a USER of their own.
 */
import { logText } from '../../helpers/log-text.js';
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, labelled, skipKubernetes } from './cluster.js';
import { runKubernetesJob, startKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-lifecycle');

/** The job's pod once it exists. */
async function jobPod(id: number): Promise<V1Pod> {
  let pod: V1Pod | undefined;
  await waitUntil(async () => {
    const list = await cluster!.core.listNamespacedPod({ namespace, labelSelector: `ci-runner/job=${id}` });
    pod = list.items.find((p) => p.status?.phase === 'Running');
    return pod !== undefined;
  }, 60_000, 'the job\'s pod to run');
  return pod!;
}

/** Until the job's pods and secrets are gone (deletion completes after the kubelet stopped the containers). */
async function allGone(id: number): Promise<void> {
  await waitUntil(async () => {
    const left = await labelled(cluster!.core, namespace, token, id);
    return left.undeleted.length === 0 && left.secrets.length === 0;
  }, 60_000, 'the job\'s pods and secrets deleted');
}

describe.skipIf(skipKubernetes)('kubernetes executor: secrets, stopping, pods that cannot start, images', () => {
  it('keeps secret variables out of the pod spec: the script gets them through the stream, services their environment through a Secret', async () => {
    const secret = `sekret-${Math.random().toString(36).slice(2)}`;
    const yaml = `j:\n  services: [${K8S_IMAGES.httpd}]\n  script:\n    - echo "secret length \${#MY_SECRET}"\n    - sleep 3\n`;
    const job = await startKubernetesJob(t, token, yaml, { namespace, variables: { MY_SECRET: secret } });
    const pod = await jobPod(job.id);
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(trace).toContain(`secret length ${secret.length}`);
    expect(trace).not.toContain(secret);
    expect(JSON.stringify(pod)).not.toContain(secret);
    const service = pod.spec?.containers.find((c) => c.name === 'svc-0');
    expect(service?.envFrom?.[0]?.secretRef?.name).toMatch(/-services$/);
    await allGone(job.id);
  });

  it('stops a canceled job\'s script with SIGTERM, runs after_script, and deletes the pod', async () => {
    // The server takes no more trace once it canceled the job: what the runner wrote is watched here.
    let local = '';
    // What the trap prints is made at run time: the echoed command lines must not contain it.
    const yaml = 'j:\n  script:\n    - S=TERM\n    - trap "echo stopped by SIG$S; exit 9" TERM\n    - echo script running\n    - sleep 300 & wait\n  after_script:\n    - A=after; echo "$A the cancel"\n';
    const job = await startKubernetesJob(t, token, yaml, { namespace, runner: { kill_grace_period: 3 }, services: { onOutput: (_build, chunk) => void (local += chunk.toString()) } });
    await waitUntil(() => local.includes('script running'), 60_000, 'the script to start');
    t.server.cancelJob(job.id);
    const { status } = await job.done;
    expect(status).toBe('canceled');
    expect(local).toContain('stopped by SIGTERM');
    expect(local).toContain('after the cancel');
    await allGone(job.id);
  });

  it('fails a job past its timeout, saying so, and deletes the pod', async () => {
    // 10 s: the pod's start counts against the timeout too, and takes seconds on a loaded machine.
    const job = await runKubernetesJob(t, token, 'j:\n  timeout: 10s\n  script:\n    - echo started\n    - sleep 300\n', { namespace });
    expect(job.status).toBe('failed');
    expect(job.trace).toContain('started');
    expect(job.trace).toContain('ERROR: Job failed: execution took longer than 10 seconds');
    await allGone(job.id);
  });

  it('fails at once with the kubelet\'s reason when the image is missing and may not be pulled', async () => {
    const started = Date.now();
    const { status, trace, id } = await runKubernetesJob(t, token, 'j:\n  image: ci-runner-test/missing:404\n  script:\n    - echo never\n', { namespace, kubernetes: { pull_policy: 'never', poll_timeout: 60 } });
    expect(status).toBe('failed');
    expect(trace).toMatch(/ERROR: Job failed: pod ci-runner-test-lifecycle\/runner-[0-9a-z]+-project-\d+-concurrent-\d+-[a-z0-9]{8}: build container: ErrImageNeverPull: Container image "ci-runner-test\/missing:404" is not present with pull policy of Never/);
    expect(trace).not.toContain('$ echo never');
    expect(Date.now() - started).toBeLessThan(60_000);
    await allGone(id);
  });

  it('fails a pod that cannot be scheduled after poll_timeout, with the scheduler\'s reason', async () => {
    const { status, trace, id } = await runKubernetesJob(t, token, 'j:\n  script:\n    - echo never\n', { namespace, kubernetes: { node_selector: { 'ci-runner-test/nowhere': 'true' }, poll_timeout: 3, poll_interval: 1 } });
    expect(status).toBe('failed');
    expect(trace).toMatch(/ERROR: Job failed: pod ci-runner-test-lifecycle\/\S+ did not start within poll_timeout \(3 s\): Unschedulable: 0\/1 nodes are available: 1 node\(s\) didn't match/);
    await allGone(id);
  });

  it('stops waiting for a pod when the job is canceled, and deletes it', async () => {
    const job = await startKubernetesJob(t, token, 'j:\n  script:\n    - echo never\n', { namespace, kubernetes: { node_selector: { 'ci-runner-test/nowhere': 'true' }, poll_timeout: 120 } });
    await waitUntil(async () => logText(await t.server.getTrace(job.id)).includes('to be running, status is Pending'), 60_000, 'the wait for the pod');
    t.server.cancelJob(job.id);
    const { status, result } = await job.done;
    expect(status).toBe('canceled');
    expect(result.kind === 'job' ? result.outcome.reason : undefined).toBe('canceled');
    await allGone(job.id);
  });

  it('runs the image\'s ENTRYPOINT first, and fails a job whose entrypoint never starts the shell, saying what to do', async () => {
    const wrapped = await runKubernetesJob(t, token, `j:\n  image: ${K8S_IMAGES.entry}\n  script:\n    - echo "script ran $((20 + 22))"\n`, { namespace });
    expect(wrapped.status, wrapped.trace).toBe('success');
    expect(wrapped.trace).toContain('script ran 42');
    const binary = await runKubernetesJob(t, token, `j:\n  image: ${K8S_IMAGES.binentry}\n  script:\n    - echo never\n`, { namespace });
    expect(binary.status).toBe('failed');
    expect(binary.trace).toContain('the build container ended (Completed, exit code 0): an image\'s ENTRYPOINT must end in exec "$@"');
    expect(binary.trace).toContain('entrypoint: [""]');
  });

  it('runs the script as the image\'s USER, checkout and artifacts included', async () => {
    const yaml = `j:\n  image: ${K8S_IMAGES.user}\n  script:\n    - id -u\n    - cat README.md\n    - echo made by $(id -un) > made.txt\n  artifacts:\n    paths: [made.txt]\n`;
    const { status, trace } = await runKubernetesJob(t, token, yaml, { namespace });
    expect(status, trace).toBe('success');
    expect(trace).toMatch(/\n1000\n/);
    expect(trace).toContain('Uploading artifacts');
  });
});
