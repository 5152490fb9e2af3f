/**
 * What an earlier process of the same runner entry left in the cluster (it was killed, or its node
 * died mid-job): pods and secrets with the entry's label. The agent removes them at start, before the
 * entry takes jobs. Several processes may serve one entry (a Deployment's replicas), so only these
 * go: those this process's own earlier life made (same owner), and those of a runner pod that no
 * longer exists. A live sibling's jobs are left alone.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { isNotFound, KubeApi } from './api.js';
import { connect } from './connection.js';
import { currentOwner, LABELS, OWNER_POD_ANNOTATION, runnerSelector, type Owner } from './labels.js';
import type { KubernetesOptions } from './options.js';

export interface KubernetesLeftovers {
  pods: number;
  secrets: number;
}

export async function removeKubernetesLeftovers(options: KubernetesOptions, runnerToken: string, signal: AbortSignal, owner: Owner = currentOwner()): Promise<KubernetesLeftovers> {
  const api = new KubeApi(connect(options));
  const namespace = options.namespace;
  const labelSelector = runnerSelector(runnerToken);
  const pods = await api.call(`listing pods in ${namespace}`, signal, (o) => api.core.listNamespacedPod({ namespace, labelSelector }, o));
  const secrets = await api.call(`listing secrets in ${namespace}`, signal, (o) => api.core.listNamespacedSecret({ namespace, labelSelector }, o));
  const orphaned = await orphanJudge(api, owner, signal);
  const podNames = (await filter(pods.items.map((p) => p.metadata), orphaned)).map((m) => m.name);
  const secretNames = (await filter(secrets.items.map((s) => s.metadata), orphaned)).map((m) => m.name);
  for (const name of podNames) {
    await api.call(`deleting pod ${name}`, signal, (o) => api.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }, o)).catch(ignoreGone);
  }
  for (const name of secretNames) {
    await api.call(`deleting secret ${name}`, signal, (o) => api.core.deleteNamespacedSecret({ name, namespace }, o)).catch(ignoreGone);
  }
  return { pods: podNames.length, secrets: secretNames.length };
}

/** A predicate: is this object left by us, or by a runner pod that is gone? (Runner pods looked up once each.) */
async function orphanJudge(api: KubeApi, owner: Owner, signal: AbortSignal): Promise<(meta: V1ObjectMeta) => Promise<boolean>> {
  const known = new Map<string, Promise<boolean>>();
  const podGone = (ref: string): Promise<boolean> => {
    const [namespace = '', name = ''] = ref.split('/');
    const answer = api.call(`reading pod ${ref}`, signal, (o) => api.core.readNamespacedPod({ name, namespace }, o)).then(
      () => false,
      // Only a clear "not found" makes it an orphan; a forbidden read or an error leaves it be.
      (error: unknown) => isNotFound(error),
    );
    known.set(ref, answer);
    return answer;
  };
  return async (meta) => {
    if (meta.labels?.[LABELS.owner] === owner.id) return true;
    const ref = meta.annotations?.[OWNER_POD_ANNOTATION];
    if (!ref || ref === `${owner.pod?.namespace}/${owner.pod?.name}`) return false;
    return known.get(ref) ?? podGone(ref);
  };
}

async function filter(items: Array<V1ObjectMeta | undefined>, keep: (meta: V1ObjectMeta) => Promise<boolean>): Promise<Array<V1ObjectMeta & { name: string }>> {
  const out: Array<V1ObjectMeta & { name: string }> = [];
  for (const meta of items) {
    if (meta?.name && (await keep(meta))) out.push({ ...meta, name: meta.name });
  }
  return out;
}

function ignoreGone(error: unknown): void {
  if (!isNotFound(error)) throw error;
}
