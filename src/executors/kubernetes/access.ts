/**
 * Whether the configured cluster answers and the runner's account may do what the executor does in
 * its namespace, asked of the API itself (SelfSubjectAccessReview), so `verify` and the agent's
 * start-up check can name the missing permission instead of a job failing on it.
 */
import { setMaxListeners } from 'node:events';
import { KubeApi } from './api.js';
import { connect } from './connection.js';
import type { KubernetesOptions } from './options.js';

interface Access {
  resource: string;
  subresource?: string;
  group?: string;
  verbs: string[];
  /** Cluster-wide (namespaces), not in the job namespace. */
  cluster?: boolean;
}

/**
 * What the executor does, as this `[runners.kubernetes]` has it do: pods with their exec subresource
 * (WebSocket exec is a GET before Kubernetes 1.30) and secrets always; the pod's warning events
 * (`print_pod_warning_events`), the service account and pull secrets read
 * (`resource_availability_check_max_attempts`), PodDisruptionBudgets and namespaces where those keys
 * ask for them.
 */
export function requiredAccess(o: KubernetesOptions): Access[] {
  const checks = o.resource_availability_check_max_attempts > 0;
  return [
    { resource: 'pods', verbs: ['create', 'get', 'list', 'watch', 'delete'] },
    { resource: 'pods', subresource: 'exec', verbs: ['create', 'get'] },
    { resource: 'secrets', verbs: ['create', 'delete', 'list', ...(checks ? ['get'] : [])] },
    ...(o.print_pod_warning_events ? [{ resource: 'events', verbs: ['list'] }] : []),
    ...(checks && o.service_account ? [{ resource: 'serviceaccounts', verbs: ['get'] }] : []),
    ...(o.pod_disruption_budget ? [{ resource: 'poddisruptionbudgets', group: 'policy', verbs: ['create', 'delete'] }] : []),
    // `get`: the start-up sweep reads a job's namespace left behind before it deletes it (leftovers.ts).
    ...(o.namespace_per_job ? [{ resource: 'namespaces', verbs: ['create', 'get', 'delete'], cluster: true }] : []),
  ];
}

export interface AccessReport {
  /** The server and where its settings came from, e.g. `https://127.0.0.1:6443 (from KUBECONFIG /x)`. */
  target: string;
  version?: string;
  /** `create pods/exec`, … in the namespace; empty when everything is allowed. */
  missing: string[];
}

/** Asks the cluster; throws when it cannot be reached or the settings are unusable. */
export async function checkAccess(options: KubernetesOptions, signal?: AbortSignal): Promise<AccessReport> {
  const connection = connect(options);
  const api = new KubeApi(connection);
  const target = `${connection.server} (from ${connection.source})`;
  const version = await api.call('asking the API server for its version', signal, (o) => api.version.getCode(o));
  const namespace = options.namespace;
  const checks = requiredAccess(options).flatMap(({ verbs, ...access }) => verbs.map((verb) => ({ ...access, verb })));
  // Each check's request listens on the signal while it runs.
  if (signal) setMaxListeners(checks.length + 10, signal);
  const answers = await Promise.all(
    checks.map(async ({ resource, subresource, group, verb, cluster }) => {
      const attributes = { ...(cluster ? {} : { namespace }), verb, resource, ...(subresource ? { subresource } : {}), ...(group ? { group } : {}) };
      const review = await api.call(`checking whether the account may ${verb} ${resource}${subresource ? `/${subresource}` : ''}`, signal, (o) =>
        api.authorization.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: attributes } } }, o),
      );
      return review.status?.allowed === true;
    }),
  );
  const missing = checks.filter((_, i) => !answers[i]).map(({ resource, subresource, verb }) => `${verb} ${resource}${subresource ? `/${subresource}` : ''}`);
  return { target, version: version.gitVersion, missing };
}

/** One line for logs and `verify`: what is missing and where, or that all is well. */
export function describeAccess(report: AccessReport, namespace: string): string {
  if (report.missing.length === 0) return `Kubernetes ${report.version ?? ''} at ${report.target}: may run jobs in namespace "${namespace}"`.replace('  ', ' ');
  return `the account of ${report.target} may not ${report.missing.join(', ')} in namespace "${namespace}" (see packaging/kubernetes/rbac.yaml for the Role the executor needs)`;
}

/** How long the agent's check may take before the cluster counts as not answering. */
export const ACCESS_CHECK_TIMEOUT_MS = 10_000;

/** The agent's start-up check (agent/executor-check.ts): never throws. */
export async function kubernetesCheck(options: KubernetesOptions, signal?: AbortSignal): Promise<{ ok: true; detail?: string } | { ok: false; reason: string }> {
  const timeout = AbortSignal.timeout(ACCESS_CHECK_TIMEOUT_MS);
  try {
    const report = await checkAccess(options, signal ? AbortSignal.any([signal, timeout]) : timeout);
    const line = describeAccess(report, options.namespace);
    return report.missing.length === 0 ? { ok: true, detail: line } : { ok: false, reason: line };
  } catch (error) {
    if (timeout.aborted && !signal?.aborted) return { ok: false, reason: `the Kubernetes API did not answer within ${ACCESS_CHECK_TIMEOUT_MS / 1000} s` };
    return { ok: false, reason: (error as Error).message };
  }
}
