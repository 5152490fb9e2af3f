/**
 * Which pull policies a container's image is tried with, as GitLab Runner 19 decides it: the job's own
 * (`image: { pull_policy }`, a service's), else `[runners.kubernetes] pull_policy`, else the cluster's
 * default; of those, the ones `allowed_pull_policies` (else `pull_policy`, else the cluster's default)
 * allows. None left fails the job with GitLab Runner's message.
 */
import { ExecutorSetupError } from '../types.js';
import type { KubernetesOptions, KubernetesPullPolicy } from './options.js';
import type { PullChoice } from './pod-spec.js';

const K8S_NAME: Readonly<Record<KubernetesPullPolicy, string>> = { always: 'Always', 'if-not-present': 'IfNotPresent', never: 'Never' };

/** A list as Go's `%v` prints Kubernetes pull policies: `[Always IfNotPresent]`, the default as nothing. */
export function policyList(policies: readonly PullChoice[]): string {
  return `[${policies.map((p) => (p ? K8S_NAME[p] : '')).join(' ')}]`;
}

export function effectivePullPolicies(container: string, job: readonly KubernetesPullPolicy[] | undefined, o: Pick<KubernetesOptions, 'pull_policy' | 'allowed_pull_policies'>): PullChoice[] {
  const runner: PullChoice[] = o.pull_policy.length > 0 ? [...o.pull_policy] : [undefined];
  const fromJob = job !== undefined && job.length > 0;
  const wanted: PullChoice[] = fromJob ? [...job] : runner;
  const allowed: PullChoice[] = o.allowed_pull_policies.length > 0 ? [...o.allowed_pull_policies] : runner;
  const effective = wanted.filter((policy) => allowed.includes(policy));
  if (effective.length > 0) return effective;
  const source = fromJob ? 'GitLab pipeline config' : o.pull_policy.length > 0 ? 'Runner config' : 'Runner config (default)';
  throw new ExecutorSetupError(
    'PULL_POLICY_NOT_ALLOWED',
    `invalid pull policy for container "${container}": pull_policy (${policyList(wanted)}) defined in ${source} is not one of the allowed_pull_policies (${policyList(allowed)})`,
  );
}
