/**
 * The job's pod from creation to deletion. Creating it returns at once: the pod starts (the image is
 * pulled, the sandbox made) while the runner fetches the sources, and `started` settles when it runs
 * or cannot. Without services, the build container counts as running as soon as an exec into it
 * finds the waiting shell's marker (so an ENTRYPOINT that never runs its command is not taken for a
 * start): the kubelet reports a started container only at its next relist (once a second), so the
 * status would say so up to a second later. When a container's image cannot be pulled and its pull
 * policies list another one, a new pod is made with it (under a new name: the old one may still be
 * terminating), as GitLab Runner's pull manager does, per container. A pod that does not start has
 * its warning events shown (`print_pod_warning_events`); with FF_PRINT_POD_EVENTS every event of a pod is
 * shown while it starts (pod-events.ts). What the start has to say is held back until
 * `release()`, so it does not split get_sources' output.
 */
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { classifyPullFailure } from '../common/pull-failure.js';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, KubernetesApiError, type KubeApi } from './api.js';
import type { KubernetesOptions } from './options.js';
import { podExec, type ExecTarget } from './exec.js';
import { BUILD_CONTAINER, pullPolicyAt, WAITING_MARKER, type PodPlan, type PullAttempt, type PullChoice } from './pod-spec.js';
import { printPodEvents } from './pod-events.js';
import { judgePod, waitForPod, type PodVerdict } from './pod-wait.js';

export interface PodOutput {
  log: (line: string) => void;
  warn: (line: string) => void;
}

/** How the executor makes each attempt's pod, and what it does once one exists. */
export interface PodMaker {
  /** The pod to create under `name`, with each container's pull policy at `attempt`. */
  spec(name: string, attempt: PullAttempt): Promise<V1Pod>;
  /** After a pod was created (a PodDisruptionBudget for it). */
  created?(pod: V1Pod, signal: AbortSignal): Promise<void>;
}

export class JobPod {
  /** The current pod's name. */
  name: string;
  /** A pod was created (and may need deleting). */
  created = false;
  /** It ran: its deletion gives the containers their grace period. */
  ran = false;
  readonly started: Promise<void>;
  private readonly stopping = new AbortController();
  private held: Array<() => void> | undefined = [];
  private readonly seenEvents = new Set<string>();

  constructor(
    private readonly api: KubeApi,
    private readonly plan: PodPlan,
    private readonly maker: PodMaker,
    private readonly options: KubernetesOptions,
    private readonly output: PodOutput,
    signal: AbortSignal,
  ) {
    this.name = plan.name;
    this.started = this.start(AbortSignal.any([signal, this.stopping.signal]));
    // Observed by whoever awaits `started`; a start abandoned with the job must not count as unhandled.
    this.started.catch(() => undefined);
  }

  get namespace(): string {
    return this.plan.namespace;
  }

  /** From now on the start's lines go out as they come (those held so far first). */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const line of held) line();
  }

  /** Stops waiting for the start (the job ended before it needed the pod). */
  abandon(): void {
    this.stopping.abort(new Error('the job no longer needs its pod'));
  }

  /** Deletes the current pod; one that never ran at once, else with `graceSeconds` (undefined: the pod's own). Never rejects: returns the failure. */
  async delete(graceSeconds: number | undefined, signal?: AbortSignal): Promise<Error | undefined> {
    if (!this.created) return undefined;
    const name = this.name;
    const grace = this.ran ? graceSeconds : 0;
    return this.api
      .call(`deleting pod ${name}`, signal, (c) => this.api.core.deleteNamespacedPod({ name, namespace: this.namespace, ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}) }, c))
      .then(
        () => undefined,
        (error: unknown) => (isNotFound(error) ? undefined : (error as Error)),
      );
  }

  /** The status watch, and for a pod without services the exec probe: whichever knows first. */
  private async wait(signal: AbortSignal): Promise<PodVerdict & { kind: 'running' | 'pull-failed' }> {
    const o = this.options;
    const settled = new AbortController();
    const both = AbortSignal.any([signal, settled.signal]);
    // With the pod's events shown, GitLab Runner leaves out its own lines about the wait.
    const events = this.plan.printEvents;
    if (events) void printPodEvents(this.api, { namespace: this.namespace, name: this.name }, { log: (line) => this.say('log', line), warn: (line) => this.say('warn', line) }, both);
    const watched = waitForPod(this.api, { namespace: this.namespace, name: this.name, pollIntervalS: o.poll_interval, pollTimeoutS: o.poll_timeout, log: events ? () => undefined : (line) => this.say('log', line), signal: both });
    const probed = this.plan.services.length === 0 ? probeExec(this.api, { namespace: this.namespace, pod: this.name, container: BUILD_CONTAINER }, both) : new Promise<never>(() => undefined);
    try {
      return await Promise.race([watched, probed]);
    } finally {
      settled.abort();
      watched.catch(() => undefined);
      probed.catch(() => undefined);
    }
  }

  /**
   * Why the build container is gone, when it is: read from the pod's status for up to a few seconds
   * (the kubelet reports an ended container at its next relist); undefined when it still runs.
   */
  async whyEnded(): Promise<string | undefined> {
    for (let attempt = 0; attempt < 8; attempt += 1) {
      const pod = await this.api.call(`reading pod ${this.name}`, undefined, (c) => this.api.core.readNamespacedPod({ name: this.name, namespace: this.namespace }, c)).catch(() => undefined);
      const verdict = pod ? judgePod(pod) : undefined;
      if (verdict?.kind === 'failed') return verdict.reason;
      await sleep(500);
    }
    return undefined;
  }

  private say(kind: 'log' | 'warn', line: string): void {
    if (this.held) this.held.push(() => this.output[kind](line));
    else this.output[kind](line);
  }

  private async start(signal: AbortSignal): Promise<void> {
    const began = Date.now();
    const attempt: Record<string, number> = {};
    for (let n = 0; ; n += 1) {
      this.name = n === 0 ? this.plan.name : `${this.plan.name}-${n}`;
      const body = await this.maker.spec(this.name, attempt);
      const pod = await this.create(body, signal);
      this.created = true;
      await this.maker.created?.(pod, signal);
      const verdict = await this.wait(signal).catch(async (error: unknown) => {
        if (!signal.aborted) await this.warningEvents();
        throw error;
      });
      if (verdict.kind === 'running') {
        this.ran = true;
        this.say('log', `Running in pod ${this.namespace}/${this.name} (started in ${((Date.now() - began) / 1000).toFixed(2)} s)`);
        for (const { detail } of verdict.exited) this.say('warn', `WARNING: service ${detail} before the job started`);
        return;
      }
      await this.warningEvents();
      const policies = this.policiesOf(verdict.container);
      const used = attempt[verdict.container] ?? 0;
      const next = used + 1 < policies.length ? pullPolicyAt(policies, used + 1) : undefined;
      this.say('warn', `WARNING: Failed to pull image "${verdict.image}" for container "${verdict.container}" with policy "${policyName(pullPolicyAt(policies, used))}": ${verdict.reason}`);
      // GitLab Runner tells the pull's error apart from the container's waiting message.
      if (used + 1 >= policies.length) throw new ExecutorSetupError('IMAGE_UNAVAILABLE', `pod ${this.namespace}/${this.name}: ${verdict.reason}`, { reason: classifyPullFailure(verdict.reason) });
      attempt[verdict.container] = used + 1;
      this.say('log', `Attempt #${n + 2}: Trying "${policyName(next)}" pull policy for "${verdict.image}" image for container "${verdict.container}"`);
      await this.delete(0);
    }
  }

  /** Creates the pod; one that exists already (a retried create that had gone through) is read. */
  private async create(body: V1Pod, signal: AbortSignal): Promise<V1Pod> {
    const { api, namespace, name } = this;
    try {
      return await api.call(`creating pod ${name}`, signal, (c) => api.core.createNamespacedPod({ namespace, body }, c));
    } catch (error) {
      signal.throwIfAborted();
      if (error instanceof KubernetesApiError && error.status === 409) {
        const existing = await api.call(`reading pod ${name}`, signal, (c) => api.core.readNamespacedPod({ name, namespace }, c)).catch(() => undefined);
        if (existing && existing.metadata?.labels?.['ci-runner/job'] === body.metadata?.labels?.['ci-runner/job']) return existing;
      }
      throw new ExecutorSetupError('POD_CREATE', (error as Error).message, { cause: error });
    }
  }

  private policiesOf(container: string): PullChoice[] {
    if (container === BUILD_CONTAINER) return this.plan.pullPolicies;
    return this.plan.services.find((s) => s.container === container)?.pullPolicies ?? [undefined];
  }

  /** `print_pod_warning_events`: the pod's warning events not shown yet, oldest first, as GitLab Runner words them. */
  private async warningEvents(): Promise<void> {
    if (!this.options.print_pod_warning_events) return;
    const { api, namespace, name } = this;
    const list = await api.call(`listing the events of pod ${name}`, undefined, (c) => api.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name},type=Warning`, limit: 200 }, c)).catch((error: unknown) => {
      this.say('warn', `WARNING: the pod's warning events could not be read (print_pod_warning_events): ${(error as Error).message}`);
    });
    const events = (list?.items ?? []).filter((e) => !this.seenEvents.has(eventKey(e))).sort((a, b) => eventTime(a) - eventTime(b));
    for (const event of events) {
      this.seenEvents.add(eventKey(event));
      this.say('warn', `WARNING: Event retrieved from the cluster: ${event.message ?? event.reason ?? ''}`);
    }
  }
}

/** Kubernetes' name of a pull policy; `""` for the cluster's default, as GitLab Runner prints it. */
function policyName(policy: PullChoice): string {
  return policy === undefined ? '' : { always: 'Always', 'if-not-present': 'IfNotPresent', never: 'Never' }[policy];
}

const eventKey = (e: CoreV1Event): string => `${e.metadata?.uid ?? ''}:${e.count ?? 0}`;
const eventTime = (e: CoreV1Event): number => new Date(e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? 0).getTime();

/** How long exec is tried as a sign of life; after that the status watch alone decides. */
const PROBE_FOR_MS = 15_000;

/** Resolves once the waiting shell's marker is there (tries at growing intervals); never resolves after PROBE_FOR_MS. */
async function probeExec(api: KubeApi, target: ExecTarget, signal: AbortSignal): Promise<PodVerdict & { kind: 'running' }> {
  const sink = (): Writable => new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const until = Date.now() + PROBE_FOR_MS;
  for (let pause = 50; Date.now() < until; pause = Math.min(1_000, pause * 1.5)) {
    const ok = await podExec(api.connection, target, { command: ['sh', '-c', `test -e ${WAITING_MARKER}`], stdout: sink(), stderr: sink(), signal }).then(
      (result) => result.exitCode === 0,
      () => false,
    );
    signal.throwIfAborted();
    if (ok) return { kind: 'running', exited: [] };
    await sleep(pause, undefined, { signal });
  }
  return new Promise<never>(() => undefined);
}
