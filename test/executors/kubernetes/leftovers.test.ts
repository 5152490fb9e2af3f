/**
 * The start-up sweep of an entry's pods and secrets: what this process's earlier life left and what a
 * runner pod that no longer exists left goes; a live sibling replica's jobs and other hosts' stay. It
 * looks too in the namespaces the entry's jobs used (a chosen one, a job's own), which the executor notes.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { removeKubernetesLeftovers } from '../../../src/executors/kubernetes/leftovers.js';
import { currentOwner, LABELS, OWNER_POD_ANNOTATION, runnerHash } from '../../../src/executors/kubernetes/labels.js';
import { NamespaceRecord, namespaceRecordFile } from '../../../src/executors/kubernetes/namespace-record.js';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { removeExecutorLeftovers } from '../../../src/agent/recover.js';
import { silentLogger } from '../../../src/log/index.js';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { cluster, labelled, skipKubernetes } from './cluster.js';
import { connectionKeys, runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let runnerToken: string;
useKubernetesTestServer((server, token) => {
  t = server;
  runnerToken = token;
});

const namespace = await useNamespace('ci-runner-test-leftovers');
const chosen = await useNamespace('ci-runner-test-leftovers-chosen');

describe.skipIf(skipKubernetes)('kubernetes leftovers', () => {
  it('removes its own and dead replicas\' pods and secrets, and leaves a live replica\'s and another host\'s', async () => {
    const core = cluster!.core;
    const token = `leftover-token-${Date.now()}`;
    const labels = (owner: string) => ({ [LABELS.managed]: 'true', [LABELS.runner]: runnerHash(token), [LABELS.job]: '1', [LABELS.slot]: '0', [LABELS.owner]: owner });
    // A runner replica that is alive: a pod of that name exists.
    await core.createNamespacedPod({ namespace, body: { metadata: { name: 'runner-alive' }, spec: { containers: [{ name: 'c', image: 'k8s-local/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } } });
    const secret = (name: string, owner: string, ownerPod?: string) =>
      core.createNamespacedSecret({ namespace, body: { metadata: { name, labels: labels(owner), ...(ownerPod ? { annotations: { [OWNER_POD_ANNOTATION]: ownerPod } } : {}) }, stringData: { k: 'v' } } });
    await secret('mine', 'me');
    await secret('of-a-live-replica', 'runner-alive', `${namespace}/runner-alive`);
    await secret('of-a-dead-replica', 'runner-dead', `${namespace}/runner-dead`);
    await secret('of-another-host', 'other-host');
    await core.createNamespacedPod({ namespace, body: { metadata: { name: 'my-old-job', labels: labels('me') }, spec: { containers: [{ name: 'c', image: 'k8s-local/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } } });

    const options = runnerSchema.parse({ url: 'http://127.0.0.1:1/', token, executor: 'kubernetes', kubernetes: { ...connectionKeys(), namespace } }).kubernetes;
    const removed = await removeKubernetesLeftovers(options, token, AbortSignal.timeout(30_000), { id: 'me', pod: { namespace, name: 'me' } });
    expect(removed).toEqual({ pods: 1, secrets: 2, namespaces: 0, failed: [] });
    const left = await labelled(core, namespace, token);
    expect(left.secrets.sort()).toEqual(['of-a-live-replica', 'of-another-host']);
    expect(left.pods).toEqual([]);
    await core.deleteNamespacedPod({ name: 'runner-alive', namespace, gracePeriodSeconds: 0 });
    for (const name of left.secrets) await core.deleteNamespacedSecret({ name, namespace });
  });

  it('looks into the namespaces its jobs used too (one a job chose, a job\'s own), and forgets them once swept', async () => {
    const core = cluster!.core;
    const job = await runKubernetesJob(t, runnerToken, 'j:\n  script: [echo moved]\n', { namespace, kubernetes: { namespace_overwrite_allowed: '^ci-runner-test-leftovers-' }, variables: { KUBERNETES_NAMESPACE_OVERWRITE: chosen } });
    expect(job.status, job.trace).toBe('success');
    const file = namespaceRecordFile(job.config.builds_dir, runnerToken);
    expect(await readFile(file, 'utf8')).toBe(`${chosen}\n`);
    // What a killed process would have left: a pod and a secret in the chosen namespace, a job's own namespace.
    const owner = currentOwner().id;
    const labels = { [LABELS.managed]: 'true', [LABELS.runner]: runnerHash(runnerToken), [LABELS.job]: String(job.id), [LABELS.slot]: '0', [LABELS.owner]: owner };
    await core.createNamespacedPod({ namespace: chosen, body: { metadata: { name: 'left-in-chosen', labels }, spec: { containers: [{ name: 'c', image: 'k8s-local/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } } });
    await core.createNamespacedSecret({ namespace: chosen, body: { metadata: { name: 'left-in-chosen', labels }, stringData: { k: 'v' } } });
    const own = `ci-runner-test-leftovers-own-${job.id}`;
    await core.createNamespace({ body: { metadata: { name: own, labels } } });
    await new NamespaceRecord(file).add(own);

    await removeExecutorLeftovers(job.config, silentLogger());
    const left = await labelled(core, chosen, runnerToken);
    expect(left.undeleted).toEqual([]);
    expect(left.secrets).toEqual([]);
    await waitUntil(async () => {
      const ns = await core.readNamespace({ name: own }).catch(() => undefined);
      return ns === undefined || ns.metadata?.deletionTimestamp !== undefined;
    }, 60_000, 'the job\'s own namespace deleted');
    expect(await readFile(file, 'utf8')).toBe('');
  });
});
