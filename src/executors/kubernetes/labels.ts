/**
 * Labels on every pod and secret the kubernetes executor creates: which runner entry (a hash of its
 * token, never the token), which job and slot, and which runner process (`owner`). Several processes
 * may serve one entry (replicas of a Deployment): at start a process removes what its own earlier
 * life left, and what a runner pod that no longer exists left (leftovers.ts), never a live sibling's.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

export const LABEL_PREFIX = 'ci-runner';
export const LABELS = {
  managed: `${LABEL_PREFIX}/managed`,
  runner: `${LABEL_PREFIX}/runner`,
  job: `${LABEL_PREFIX}/job`,
  slot: `${LABEL_PREFIX}/slot`,
  owner: `${LABEL_PREFIX}/owner`,
} as const;

/** Annotation naming the runner's own pod (`namespace/name`) when it runs in one. */
export const OWNER_POD_ANNOTATION = `${LABEL_PREFIX}/owner-pod`;

/** Identifies a runner entry without revealing its token. */
export function runnerHash(runnerToken: string): string {
  return createHash('sha256').update(runnerToken).digest('hex').slice(0, 16);
}

/** This runner process, as far as another one needs to tell it apart. */
export interface Owner {
  /** A label value: the pod's name (POD_NAME, from the downward API) or the host name. */
  id: string;
  /** `namespace/name` of the runner's pod, when POD_NAME and POD_NAMESPACE say it runs in one. */
  pod?: { namespace: string; name: string };
}

export function currentOwner(env: NodeJS.ProcessEnv = process.env): Owner {
  const podName = env.POD_NAME?.trim();
  const podNamespace = env.POD_NAMESPACE?.trim();
  const id = labelValue(podName || hostname());
  return podName && podNamespace ? { id, pod: { namespace: podNamespace, name: podName } } : { id };
}

/** The labels of one job's pod and secrets. */
export function jobLabels(runnerToken: string, jobId: number, slot: number, owner: Owner): Record<string, string> {
  return {
    [LABELS.managed]: 'true',
    [LABELS.runner]: runnerHash(runnerToken),
    [LABELS.job]: String(jobId),
    [LABELS.slot]: String(slot),
    [LABELS.owner]: owner.id,
  };
}

/** The label selector for everything of one runner entry. */
export function runnerSelector(runnerToken: string): string {
  return `${LABELS.runner}=${runnerHash(runnerToken)}`;
}

/** A string as a label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric. */
export function labelValue(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return cleaned || 'unknown';
}
