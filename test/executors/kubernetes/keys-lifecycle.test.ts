/**
 * GitLab Runner 19's [runners.kubernetes] keys around the job's pod, on the kit's real cluster: lifecycle
 * hooks and grace periods, poll_timeout with the reason and the pod's warning events, pods the API
 * server refuses (the job fails with its reason, nothing is left), pod_spec patches, the job's own
 * namespace and the namespace a job may choose, a PodDisruptionBudget, a job's bearer token. Through a
 * recording proxy, so what was sent is seen too.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { waitUntil } from '../../cli/helpers.js';
import { cluster, K8S_IMAGES, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';
import { nothingLeft, runProxied } from './keys-jobs.js';
import { recordingProxy, type RecordingProxy } from './recording-proxy.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-keys-life');
const chosen = await useNamespace('ci-runner-test-keys-life-chosen');
const quota = await useNamespace('ci-runner-test-keys-life-quota');
let proxy: RecordingProxy;

beforeAll(async () => {
  if (!cluster) return;
  proxy = await recordingProxy(cluster.api, readFileSync(cluster.caFile));
  await cluster.core.createNamespacedResourceQuota({ namespace: quota, body: { metadata: { name: 'no-pods' }, spec: { hard: { pods: '0' } } } }).catch((error: unknown) => {
    if ((error as { code?: number }).code !== 409) throw error;
  });
});

afterAll(async () => {
  await proxy?.close();
});

const run = (script: string[], kubernetes: Record<string, unknown>, variables: Record<string, string> = {}) => runProxied({ t, token, namespace, proxy }, script, kubernetes, variables);

describe.skipIf(skipKubernetes)('[runners.kubernetes] keys around the job\'s pod', () => {
  it('lifecycle: hooks in every container, the post_start one run before the script; termination and cleanup grace periods', async () => {
    const kubernetes = {
      container_lifecycle: { post_start: { exec: { command: ['sh', '-c', 'echo post_start ran > /tmp/hook'] } }, pre_stop: { exec: { command: ['sh', '-c', 'true'] } } },
      pod_termination_grace_period_seconds: 7,
      cleanup_grace_period_seconds: 1,
    };
    const job = await run(['cat /tmp/hook'], kubernetes);
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('post_start ran');
    const spec = job.pod!.created!.spec!;
    expect(spec.terminationGracePeriodSeconds).toBe(7);
    expect(spec.containers[0]!.lifecycle).toEqual({ postStart: { exec: { command: ['sh', '-c', 'echo post_start ran > /tmp/hook'] } }, preStop: { exec: { command: ['sh', '-c', 'true'] } } });
    const name = job.pod!.sent.metadata!.name!;
    await waitUntil(() => proxy.writes.some((w) => w.startsWith(`DELETE /api/v1/namespaces/${namespace}/pods/${name}?`) && w.includes('gracePeriodSeconds=1')), 30_000, 'the pod deleted with cleanup_grace_period_seconds');
  });

  it('poll_timeout: a pod that never runs fails the job in time, with the scheduler\'s reason and the pod\'s warning events', async () => {
    const job = await run(['echo never'], { node_selector: { 'ci-runner-test/nowhere': 'true' }, poll_timeout: 4, poll_interval: 1 });
    expect(job.status).toBe('failed');
    expect(job.trace).toMatch(/ERROR: Job failed: pod ci-runner-test-keys-life\/\S+ did not start within poll_timeout \(4 s\): Unschedulable: 0\/1 nodes are available/);
    expect(job.trace).toMatch(/WARNING: Event retrieved from the cluster: 0\/1 nodes are available: 1 node\(s\) didn't match/);
    await nothingLeft(namespace, token, job.id);
    const quiet = await run(['echo never'], { node_selector: { 'ci-runner-test/nowhere': 'true' }, poll_timeout: 3, poll_interval: 1, print_pod_warning_events: false });
    expect(quiet.status).toBe('failed');
    expect(quiet.trace).not.toContain('Event retrieved from the cluster');
  });

  it('a pod the API server refuses (a runtime class it lacks, a quota) fails the job with its reason and leaves nothing behind', async () => {
    const refused = await run(['echo never'], { runtime_class_name: 'ci-runner-test-nope', services: [K8S_IMAGES.httpd] });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toMatch(/ERROR: Job failed: creating pod \S+: pods "\S+" is forbidden: pod rejected: RuntimeClass "ci-runner-test-nope" not found/);
    expect(refused.pod?.status).toBe(403);
    await nothingLeft(namespace, token, refused.id);
    const overQuota = await run(['echo never'], { namespace: quota, services: [K8S_IMAGES.httpd] });
    expect(overQuota.status).toBe('failed');
    expect(overQuota.trace).toMatch(/ERROR: Job failed: creating pod \S+: pods "\S+" is forbidden: exceeded quota: no-pods, requested: pods=1, used: pods=0, limited: pods=0/);
    await nothingLeft(quota, token, overQuota.id);
  });

  it('pod_spec: strategic, merge and json patches applied in order with FF_USE_ADVANCED_POD_SPEC_CONFIGURATION, and not without it', async () => {
    const pod_spec = [
      { name: 'env', patch: 'containers:\n  - name: build\n    env:\n      - name: FROM_STRATEGIC\n        value: strategic\n' },
      { name: 'host', patch_type: 'merge', patch: '{"hostname": "patched-host"}' },
      { name: 'more env', patch_type: 'json', patch: '[{"op": "add", "path": "/containers/0/env/-", "value": {"name": "FROM_JSON", "value": "json"}}]' },
    ];
    const script = ['echo "env: $FROM_STRATEGIC $FROM_JSON"', 'hostname'];
    const job = await run(script, { pod_spec }, { FF_USE_ADVANCED_POD_SPEC_CONFIGURATION: 'true' });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('Advanced Pod Spec configuration enabled, merging the provided PodSpec to the generated one.');
    expect(job.trace).toContain('env: strategic json');
    expect(job.trace).toMatch(/\npatched-host\n/);
    expect(job.pod!.created!.spec!.containers[0]!.env).toEqual([{ name: 'FROM_STRATEGIC', value: 'strategic' }, { name: 'FROM_JSON', value: 'json' }]);
    const off = await run(script, { pod_spec });
    expect(off.status, off.trace).toBe('success');
    expect(off.trace).toContain('WARNING: [runners.kubernetes] pod_spec is not applied: FF_USE_ADVANCED_POD_SPEC_CONFIGURATION is off');
    expect(off.trace).toContain('env:  \n');
    expect(off.pod!.sent.spec!.hostname).toBeUndefined();
  });

  it('FF_USE_POD_ACTIVE_DEADLINE_SECONDS (on by default) sets the pod\'s activeDeadlineSeconds to the job timeout + 1 s; FF_PRINT_POD_EVENTS prints the pod\'s events while it starts', async () => {
    const job = await run(['echo deadline'], {}, { FF_PRINT_POD_EVENTS: 'true' });
    expect(job.status, job.trace).toBe('success');
    // The reference server's job timeout: 1 h.
    expect(job.pod!.created!.spec!.activeDeadlineSeconds).toBe(3601);
    expect(job.trace).toContain('Using FF_USE_POD_ACTIVE_DEADLINE_SECONDS, the Pod activeDeadlineSeconds will be set to the job timeout: 1h0m0s...');
    expect(job.trace).toContain('Subscribing to Kubernetes Pod events...');
    expect(job.trace).toMatch(/\nType {5}Reason {6,}Message\nNormal {3}Scheduled {3,}Successfully assigned /);
    expect(job.trace).not.toContain('Waiting for pod');
    const off = await run(['echo no deadline'], {}, { FF_USE_POD_ACTIVE_DEADLINE_SECONDS: 'false' });
    expect(off.status, off.trace).toBe('success');
    expect(off.pod!.created!.spec!.activeDeadlineSeconds).toBeUndefined();
    expect(off.trace).not.toContain('Using FF_USE_POD_ACTIVE_DEADLINE_SECONDS');
    expect(off.trace).not.toContain('Subscribing to Kubernetes Pod events...');
  });

  it('namespaces: the job\'s own (namespace_per_job), deleted after it; the one a job chooses where namespace_overwrite_allowed matches', async () => {
    const own = await run(['echo in my namespace'], { namespace_per_job: true });
    expect(own.status, own.trace).toBe('success');
    expect(own.trace).toContain(`Using Kubernetes namespace: ci-job-${own.id}`);
    expect(proxy.writes).toContain('POST /api/v1/namespaces');
    await waitUntil(async () => {
      const ns = await cluster!.core.readNamespace({ name: `ci-job-${own.id}` }).catch(() => undefined);
      return ns === undefined || ns.metadata?.deletionTimestamp !== undefined;
    }, 60_000, 'the job\'s namespace deleted');
    const moved = await run(['echo moved'], { namespace_overwrite_allowed: '^ci-runner-test-keys-life-' }, { KUBERNETES_NAMESPACE_OVERWRITE: chosen });
    expect(moved.status, moved.trace).toBe('success');
    expect(moved.trace).toContain(`"Namespace" overwritten with "${chosen}"`);
    expect(moved.pod!.created!.metadata!.namespace).toBe(chosen);
    await nothingLeft(chosen, token, moved.id);
    const refused = await run(['echo never'], { namespace_overwrite_allowed: '^ci-runner-test-keys-life-' }, { KUBERNETES_NAMESPACE_OVERWRITE: 'kube-system' });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain('ERROR: Job failed: couldn\'t prepare overwrites: provided value "kube-system" does not match "^ci-runner-test-keys-life-"');
  });

  it('pod_disruption_budget: sent to policy/v1 after the pod; Kubernetes 1.20 lacks it, so the job fails with the API\'s answer and leaves nothing', async () => {
    const job = await run(['echo never'], { pod_disruption_budget: true });
    expect(proxy.writes.some((w) => w.startsWith(`POST /apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`))).toBe(true);
    expect(job.status).toBe('failed');
    expect(job.trace).toMatch(/ERROR: Job failed: error creating PodDisruptionBudget: creating PodDisruptionBudget \S+-pdb: (HTTP 404|the server could not find the requested resource)/);
    await nothingLeft(namespace, token, job.id);
  });

  it('bearer_token_overwrite_allowed: the job\'s KUBERNETES_BEARER_TOKEN is the one the pod is made with', async () => {
    const job = await run(['echo never'], { bearer_token_overwrite_allowed: true }, { KUBERNETES_BEARER_TOKEN: 'not-a-valid-token' });
    expect(job.status).toBe('failed');
    expect(job.trace).toContain('"BearerToken" overwritten with "XXXXXXXX..."');
    expect(job.trace).toMatch(/ERROR: Job failed: creating pod \S+: (HTTP 401|Unauthorized)/);
  });
});
