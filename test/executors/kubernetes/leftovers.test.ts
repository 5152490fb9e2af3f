/**
 * The start-up sweep of an entry's pods and secrets: what this process's earlier life left and what a
 * runner pod that no longer exists left goes; a live sibling replica's jobs and other hosts' stay.
 */
import { describe, expect, it } from 'vitest';
import { removeKubernetesLeftovers } from '../../../src/executors/kubernetes/leftovers.js';
import { LABELS, OWNER_POD_ANNOTATION, runnerHash } from '../../../src/executors/kubernetes/labels.js';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { cluster, labelled, skipKubernetes } from './cluster.js';
import { connectionKeys, useNamespace } from './jobs.js';

const namespace = await useNamespace('ci-runner-test-leftovers');

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
    expect(removed).toEqual({ pods: 1, secrets: 2 });
    const left = await labelled(core, namespace, token);
    expect(left.secrets.sort()).toEqual(['of-a-live-replica', 'of-another-host']);
    expect(left.pods).toEqual([]);
    await core.deleteNamespacedPod({ name: 'runner-alive', namespace, gracePeriodSeconds: 0 });
    for (const name of left.secrets) await core.deleteNamespacedSecret({ name, namespace });
  });
});
