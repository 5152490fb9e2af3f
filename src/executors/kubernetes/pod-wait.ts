/**
 * Waiting for the job's pod to run: every container started, judged on each change the API reports
 * (a watch, so a pod that starts in 300 ms is used after 300 ms) and on a status read every
 * `poll_interval` (so a watch that breaks costs nothing). A pod still not running after
 * `poll_timeout` fails the job with Kubernetes' own reason (`Unschedulable: 0/1 nodes are available:
 * …`); an image that cannot be had fails it at once, with the kubelet's (`ErrImageNeverPull:
 * Container image "x" is not present with pull policy of Never`).
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { ExecutorSetupError } from '../types.js';
import type { KubeApi } from './api.js';
import { BUILD_CONTAINER } from './pod-spec.js';
import { watchWhile } from './watch.js';

/** Waiting reasons no amount of waiting fixes. */
const FATAL_WAITING = new Set(['ErrImageNeverPull', 'InvalidImageName', 'RunContainerError', 'CreateContainerError']);
/** Waiting reasons of an image that could not be pulled (another pull policy may do better). */
const PULL_FAILED = new Set(['ErrImagePull', 'ImagePullBackOff']);

export type PodVerdict =
  | { kind: 'running'; exited: Array<{ container: string; detail: string }> }
  | { kind: 'waiting'; reason: string }
  | { kind: 'pull-failed'; reason: string; container: string; image: string }
  | { kind: 'failed'; reason: string };

/** What a pod's status says about its start (pure, for tests). */
export function judgePod(pod: V1Pod): PodVerdict {
  const statuses = pod.status?.containerStatuses ?? [];
  const expected = pod.spec?.containers.map((c) => c.name) ?? [BUILD_CONTAINER];
  const build = statuses.find((s) => s.name === BUILD_CONTAINER);
  if (build?.state?.terminated) {
    const t = build.state.terminated;
    const ended = `the build container ended (${t.reason ?? 'exited'}, exit code ${t.exitCode}${t.message ? `: ${t.message.trim()}` : ''})`;
    // Killed (out of memory, by a signal) it was running; otherwise its ENTRYPOINT did not keep it so.
    const killed = t.reason === 'OOMKilled' || t.exitCode >= 128;
    return { kind: 'failed', reason: killed ? ended : `${ended}: an image's ENTRYPOINT must end in exec "$@" to run the job; otherwise replace it in .gitlab-ci.yml: image: { name: ..., entrypoint: [""] }` };
  }
  for (const s of statuses) {
    const waiting = s.state?.waiting;
    if (!waiting?.reason) continue;
    const text = `${s.name === BUILD_CONTAINER ? 'build container' : `service container ${s.name} (${s.image})`}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    if (FATAL_WAITING.has(waiting.reason)) return { kind: 'failed', reason: text };
    if (PULL_FAILED.has(waiting.reason)) return { kind: 'pull-failed', reason: text, container: s.name, image: s.image };
  }
  const phase = pod.status?.phase ?? 'Pending';
  if (phase === 'Failed' || phase === 'Succeeded') return { kind: 'failed', reason: `the pod ended (${phase})${pod.status?.message ? `: ${pod.status.message}` : ''}` };
  const started = (s: V1ContainerStatus): boolean => Boolean(s.state?.running ?? s.state?.terminated);
  if (phase === 'Running' && build?.state?.running && expected.every((name) => statuses.some((s) => s.name === name && started(s)))) {
    const exited = statuses.filter((s) => s.name !== BUILD_CONTAINER && s.state?.terminated).map((s) => ({ container: s.name, detail: `${s.image} exited with code ${s.state?.terminated?.exitCode}` }));
    return { kind: 'running', exited };
  }
  return { kind: 'waiting', reason: pendingReason(pod) };
}

/** The most telling reason a pending pod gives: scheduling, then a container's wait, then its phase. */
function pendingReason(pod: V1Pod): string {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') return `${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message ?? 'not scheduled yet'}`;
  for (const s of pod.status?.containerStatuses ?? []) {
    const waiting = s.state?.waiting;
    if (waiting?.reason) return `${s.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
  }
  const notReady = pod.status?.conditions?.find((c) => c.type === 'ContainersReady' && c.status === 'False');
  if (notReady) return `${notReady.reason ?? 'ContainersNotReady'}${notReady.message ? `: ${notReady.message}` : ''}`;
  return pod.status?.phase ?? 'Pending';
}

export interface WaitOptions {
  namespace: string;
  name: string;
  pollIntervalS: number;
  pollTimeoutS: number;
  log: (line: string) => void;
  signal: AbortSignal;
}

/** Resolves once the pod runs; rejects with an {@link ExecutorSetupError} (or the abort reason). */
export async function waitForPod(api: KubeApi, options: WaitOptions): Promise<PodVerdict & { kind: 'running' | 'pull-failed' }> {
  const { namespace, name } = options;
  const done = new AbortController();
  const signal = AbortSignal.any([options.signal, done.signal]);
  let lastReason = '';
  let lastPhase = 'Unknown';
  return new Promise((resolve, reject) => {
    const finish = (outcome: { value?: PodVerdict & { kind: 'running' | 'pull-failed' }; error?: unknown }): void => {
      if (done.signal.aborted) return;
      done.abort();
      clearTimeout(deadline);
      clearInterval(poll);
      if (outcome.value) resolve(outcome.value);
      else reject(outcome.error);
    };
    const judge = (pod: V1Pod): void => {
      lastPhase = pod.status?.phase ?? lastPhase;
      const verdict = judgePod(pod);
      if (verdict.kind === 'running' || verdict.kind === 'pull-failed') finish({ value: verdict });
      else if (verdict.kind === 'failed') finish({ error: new ExecutorSetupError('POD_FAILED', `pod ${namespace}/${name}: ${verdict.reason}`) });
      else if (verdict.reason !== lastReason) {
        lastReason = verdict.reason;
        options.log(`Waiting for pod ${namespace}/${name} to be running, status is ${pod.status?.phase ?? 'Pending'}: ${verdict.reason}`);
      }
    };
    const read = (): void => {
      api.call(`reading pod ${name}`, signal, (o) => api.core.readNamespacedPod({ name, namespace }, o)).then(judge, (error: unknown) => {
        if (!signal.aborted) options.log(`Reading pod ${namespace}/${name} failed: ${(error as Error).message}; trying again`);
      });
    };
    const deadline = setTimeout(() => {
      const why = `timed out waiting for pod to start (last phase: ${lastPhase})`;
      finish({ error: new ExecutorSetupError('POD_TIMEOUT', `pod ${namespace}/${name} did not start within poll_timeout (${options.pollTimeoutS} s): ${lastReason || why}`) });
    }, options.pollTimeoutS * 1000);
    const poll = setInterval(read, options.pollIntervalS * 1000);
    options.signal.addEventListener('abort', () => finish({ error: options.signal.reason }), { once: true, signal: done.signal });
    void watchPod(api, options, judge, signal);
    read();
  });
}

/** Feeds every change of the pod to `judge` until `signal` aborts; a failed watch is left to the polls. */
async function watchPod(api: KubeApi, options: WaitOptions, judge: (pod: V1Pod) => void, signal: AbortSignal): Promise<void> {
  try {
    await watchWhile(api, `/api/v1/namespaces/${options.namespace}/pods`, { fieldSelector: `metadata.name=${options.name}` }, (type, pod: V1Pod) => {
      if (!signal.aborted && (type === 'ADDED' || type === 'MODIFIED')) judge(pod);
    }, signal);
  } catch {
    // The polls go on.
  }
}
