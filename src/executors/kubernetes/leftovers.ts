/**
 * What an earlier process of the same runner entry left in the cluster (it was killed, or its node
 * died mid-job): pods and secrets with the entry's label, in `[runners.kubernetes] namespace` and in
 * the namespaces its jobs used besides (namespace-record.ts: a chosen one, a job's own, which goes
 * too when it is ours). The agent removes them at start, before the entry takes jobs. Several
 * processes may serve one entry (a Deployment's replicas), so only these go: those this process's own
 * earlier life made (same owner), and those of a runner pod that no longer exists. A live sibling's
 * jobs are left alone.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { isNotFound, KubeApi } from './api.js';
import { connect } from './connection.js';
import { currentOwner, LABELS, OWNER_POD_ANNOTATION, runnerSelector, type Owner } from './labels.js';
import type { NamespaceRecord } from './namespace-record.js';
import type { KubernetesOptions } from './options.js';

export interface KubernetesLeftovers {
  pods: number;
  secrets: number;
  namespaces: number;
  /** Recorded namespaces that could not be looked into (kept for the next start), with why. */
  failed: string[];
}

export async function removeKubernetesLeftovers(options: KubernetesOptions, runnerToken: string, signal: AbortSignal, owner: Owner = currentOwner(), record?: NamespaceRecord): Promise<KubernetesLeftovers> {
  const api = new KubeApi(connect(options));
  const sweep = { api, selector: runnerSelector(runnerToken), orphaned: await orphanJudge(api, owner, signal), signal };
  const total: KubernetesLeftovers = { ...(await sweepNamespace(sweep, options.namespace)), namespaces: 0, failed: [] };
  const recorded = (await record?.read()) ?? [];
  const done = new Set<string>();
  for (const namespace of recorded.filter((name) => name !== options.namespace)) {
    try {
      const removed = await sweepNamespace(sweep, namespace);
      total.pods += removed.pods;
      total.secrets += removed.secrets;
      if (await removeOwnNamespace(sweep, namespace)) total.namespaces += 1;
      done.add(namespace);
    } catch (error) {
      signal.throwIfAborted();
      total.failed.push(`${namespace}: ${(error as Error).message}`);
    }
  }
  await record?.retain((name) => !done.has(name));
  return total;
}

interface Sweep {
  api: KubeApi;
  selector: string;
  orphaned: (meta: V1ObjectMeta) => Promise<boolean>;
  signal: AbortSignal;
}

/** The entry's orphaned pods and secrets in one namespace, deleted. */
async function sweepNamespace({ api, selector: labelSelector, orphaned, signal }: Sweep, namespace: string): Promise<{ pods: number; secrets: number }> {
  const pods = await api.call(`listing pods in ${namespace}`, signal, (o) => api.core.listNamespacedPod({ namespace, labelSelector }, o));
  const secrets = await api.call(`listing secrets in ${namespace}`, signal, (o) => api.core.listNamespacedSecret({ namespace, labelSelector }, o));
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

/**
 * A job's own namespace (`namespace_per_job`) this entry made and no live process uses, deleted. One
 * the runner may not read (a chosen namespace, where it may only work inside) is not its own.
 */
async function removeOwnNamespace({ api, selector, orphaned, signal }: Sweep, name: string): Promise<boolean> {
  const namespace = await api.call(`reading namespace ${name}`, signal, (o) => api.core.readNamespace({ name }, o)).catch(() => {
    signal.throwIfAborted();
    return undefined;
  });
  const meta = namespace?.metadata;
  const [key, value] = selector.split('=');
  if (!meta || meta.deletionTimestamp || !key || meta.labels?.[key] !== value || !(await orphaned(meta))) return false;
  await api.call(`deleting namespace ${name}`, signal, (o) => api.core.deleteNamespace({ name }, o)).catch(ignoreGone);
  return true;
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
