/**
 * What a job's pod may need around it, each as GitLab Runner 19 does it: the job's own namespace
 * (`namespace_per_job`: `ci-job-<id>`, made before the pod and deleted after it), a check that the
 * service account and image pull secrets the pod names exist (`resource_availability_check_max_attempts`,
 * 5 s apart), and a PodDisruptionBudget that keeps the pod from voluntary eviction
 * (`pod_disruption_budget`, policy/v1, owned by the pod).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { sleep } from '../../util/timers.js';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, type KubeApi } from './api.js';

/** GitLab Runner's wait between two checks of a resource. */
export const RESOURCE_CHECK_INTERVAL_MS = 5_000;

/** Makes the job's namespace, labelled as its other objects are. */
export async function createNamespace(api: KubeApi, name: string, labels: Record<string, string>, signal: AbortSignal): Promise<void> {
  await api.call(`creating namespace ${name}`, signal, (c) => api.core.createNamespace({ body: { metadata: { name, labels } } }, c)).catch((error: unknown) => {
    signal.throwIfAborted();
    throw new ExecutorSetupError('NAMESPACE_CREATE', `failed to create namespace: ${(error as Error).message}`, { cause: error });
  });
}

export async function deleteNamespace(api: KubeApi, name: string, signal: AbortSignal): Promise<void> {
  await api.call(`deleting namespace ${name}`, signal, (c) => api.core.deleteNamespace({ name }, c)).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}

export interface ResourceCheck {
  namespace: string;
  serviceAccount?: string;
  pullSecrets: readonly string[];
  /** Checks after the first one; 0 checks nothing. */
  attempts: number;
  intervalMs?: number;
  signal: AbortSignal;
}

/** Waits until the service account and each pull secret exist; fails with GitLab Runner's message when one never does. */
export async function checkResources(api: KubeApi, check: ResourceCheck): Promise<void> {
  if (check.attempts <= 0) return;
  const { namespace, signal } = check;
  const exists = (read: () => Promise<unknown>): Promise<boolean> => read().then(() => true, () => false);
  const wanted: Array<{ type: string; name: string; read: () => Promise<unknown> }> = [
    ...(check.serviceAccount ? [{ type: 'ServiceAccount', name: check.serviceAccount, read: () => api.call('reading the service account', signal, (c) => api.core.readNamespacedServiceAccount({ name: check.serviceAccount ?? '', namespace }, c)) }] : []),
    ...check.pullSecrets.map((name) => ({ type: 'ImagePullSecret', name, read: () => api.call(`reading secret ${name}`, signal, (c) => api.core.readNamespacedSecret({ name, namespace }, c)) })),
  ];
  for (const resource of wanted) {
    for (let attempt = -1; ; attempt += 1) {
      if (await exists(resource.read)) break;
      signal.throwIfAborted();
      if (attempt + 1 >= check.attempts) {
        throw new ExecutorSetupError('RESOURCE_MISSING', `Timed out while waiting for ${resource.type}/${resource.name} to be present in the cluster`);
      }
      await sleep(check.intervalMs ?? RESOURCE_CHECK_INTERVAL_MS, signal);
    }
  }
}

/** A PodDisruptionBudget of minAvailable 1 over the job's pods, owned by `pod` (deleted with it). */
export async function createDisruptionBudget(api: KubeApi, pod: V1Pod, selector: Record<string, string>, signal: AbortSignal): Promise<string> {
  const namespace = pod.metadata?.namespace ?? '';
  const name = `${pod.metadata?.name ?? ''}-pdb`;
  const owner = { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
  await api
    .call(`creating PodDisruptionBudget ${name}`, signal, (c) =>
      api.policy.createNamespacedPodDisruptionBudget({ namespace, body: { metadata: { name, namespace, labels: selector, ownerReferences: [owner] }, spec: { minAvailable: 1, selector: { matchLabels: selector } } } }, c),
    )
    .catch((error: unknown) => {
      signal.throwIfAborted();
      throw new ExecutorSetupError('PDB_CREATE', `error creating PodDisruptionBudget: ${(error as Error).message}`, { cause: error });
    });
  return name;
}

export async function deleteDisruptionBudget(api: KubeApi, namespace: string, name: string, signal: AbortSignal): Promise<void> {
  await api.call(`deleting PodDisruptionBudget ${name}`, signal, (c) => api.policy.deleteNamespacedPodDisruptionBudget({ name, namespace }, c)).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}
