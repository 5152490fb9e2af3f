/**
 * The job's pod from creation to deletion. Creating it returns at once: the pod starts (the image is
 * pulled, the sandbox made) while the runner fetches the sources, and `started` settles when it runs
 * or cannot. When the image cannot be pulled and `[runners.kubernetes] pull_policy` lists another
 * policy, a new pod is made with it (under a new name: the old one may still be terminating). What
 * the start has to say is held back until `release()`, so it does not split get_sources' output.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, type KubeApi } from './api.js';
import type { KubernetesOptions, KubernetesPullPolicy } from './options.js';
import { podSpec, type PodPlan } from './pod-spec.js';
import { waitForPod } from './pod-wait.js';

export interface PodOutput {
  log: (line: string) => void;
  warn: (line: string) => void;
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

  constructor(
    private readonly api: KubeApi,
    private readonly plan: PodPlan,
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

  /** Deletes the current pod; one that never ran at once, else with `graceSeconds`. Never rejects: returns the failure. */
  async delete(graceSeconds: number): Promise<Error | undefined> {
    if (!this.created) return undefined;
    const name = this.name;
    const grace = this.ran ? graceSeconds : 0;
    return this.api.call(`deleting pod ${name}`, undefined, (c) => this.api.core.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds: grace }, c)).then(
      () => undefined,
      (error: unknown) => (isNotFound(error) ? undefined : (error as Error)),
    );
  }

  private say(kind: 'log' | 'warn', line: string): void {
    if (this.held) this.held.push(() => this.output[kind](line));
    else this.output[kind](line);
  }

  private async start(signal: AbortSignal): Promise<void> {
    const o = this.options;
    const policies: Array<KubernetesPullPolicy | undefined> = o.pull_policy.length > 0 ? o.pull_policy : [undefined];
    const began = Date.now();
    for (const [i, policy] of policies.entries()) {
      this.name = i === 0 ? this.plan.name : `${this.plan.name}-${i}`;
      const body: V1Pod = podSpec({ ...this.plan, name: this.name, ...(policy ? { pullPolicy: policy } : {}) }, o);
      await this.api.call(`creating pod ${this.name}`, signal, (c) => this.api.core.createNamespacedPod({ namespace: this.namespace, body }, c)).catch((error: unknown) => {
        signal.throwIfAborted();
        throw new ExecutorSetupError('POD_CREATE', (error as Error).message, { cause: error });
      });
      this.created = true;
      const verdict = await waitForPod(this.api, { namespace: this.namespace, name: this.name, pollIntervalS: o.poll_interval, pollTimeoutS: o.poll_timeout, log: (line) => this.say('log', line), signal });
      if (verdict.kind === 'running') {
        this.ran = true;
        this.say('log', `Running in pod ${this.namespace}/${this.name} (started in ${((Date.now() - began) / 1000).toFixed(1)} s)`);
        for (const { detail } of verdict.exited) this.say('warn', `WARNING: service ${detail} before the job started`);
        return;
      }
      const next = policies[i + 1];
      if (!next) throw new ExecutorSetupError('IMAGE_UNAVAILABLE', `pod ${this.namespace}/${this.name}: ${verdict.reason}`);
      this.say('warn', `WARNING: ${verdict.reason}; trying again with pull_policy = ${next}`);
      await this.delete(0);
    }
  }
}
