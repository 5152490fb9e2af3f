/**
 * The kubernetes executor: each job is one pod in `[runners.kubernetes] namespace`, its build
 * container from the job's image and its services as sidecars (pod-spec.ts). The pod needs no route
 * to the coordinator: get_sources runs on the runner (`host`), artifacts and cache are the runner's,
 * and files cross through exec (transfer.ts): the checkout into the pod with the first stage, the
 * build's work back out before the runner archives it (`collect`). Every stage is one exec (stage.ts).
 * The pod and its secrets carry the job's labels and are deleted in `cleanup`, whatever the outcome.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { expandName, checkAllowed } from '../docker/image.js';
import { serviceAliases, serviceEnvironment } from '../docker/services.js';
import { generateScript } from '../shell/script.js';
import type { Executor, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, KubeApi } from './api.js';
import { connect, KubernetesConfigError } from './connection.js';
import { currentOwner, jobLabels, LABEL_PREFIX, labelValue, OWNER_POD_ANNOTATION, type Owner } from './labels.js';
import type { KubernetesOptions, KubernetesPullPolicy } from './options.js';
import { BUILD_CONTAINER, podSpec, POD_BUILDS_DIR, serviceHostnames, type PodPlan } from './pod-spec.js';
import { waitForPod } from './pod-wait.js';
import { environmentSecret, registryConfig, registrySecret } from './secrets.js';
import { runPodStage } from './stage.js';
import { collectProject, packPaths } from './transfer.js';

export interface KubernetesExecutorOptions {
  kubernetes: KubernetesOptions;
  runnerToken: string;
  /** Time between SIGTERM and SIGKILL, ms: for a stopped stage, and the pod's grace period unless configured. */
  killGraceMs: number;
  /** Runs get_sources on the runner (a shell executor). */
  host: Executor;
  /** Who this runner process is (leftovers.ts); default from POD_NAME/POD_NAMESPACE or the host name. */
  owner?: Owner;
  logger?: Logger;
}

interface JobState {
  api: KubeApi;
  namespace: string;
  pod: string;
  secrets: string[];
  slotDir: string;
  projectDir: string;
  stateDir: string;
  /** The checkout went into the pod (with the first stage). */
  synced: boolean;
}

export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes';
  readonly host: Executor;
  readonly marker: string | undefined;
  private job: JobState | undefined;
  private podCreated = false;
  /** The pod ran: its deletion gives the containers their grace period (one that never ran is removed at once). */
  private podRan = false;

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.host = options.host;
    this.marker = options.host.marker;
  }

  buildPath(hostPath: string): string {
    const slotDir = this.job?.slotDir;
    if (slotDir === undefined) return hostPath;
    if (hostPath === slotDir) return POD_BUILDS_DIR;
    return hostPath.startsWith(`${slotDir}/`) ? `${POD_BUILDS_DIR}${hostPath.slice(slotDir.length)}` : hostPath;
  }

  async prepare(request: PrepareRequest): Promise<void> {
    const o = this.options.kubernetes;
    const { build } = request;
    const image = expandName(build.options.image ?? '', request.variables) || o.image;
    if (!image) throw new ExecutorSetupError('NO_IMAGE', 'no image: the job names none and [runners.kubernetes] image is not set');
    checkAllowed(image, o.allowed_images, 'allowed_images', 'image', '[runners.kubernetes]');
    const services = [...o.services, ...(build.options.services ?? []).map((name) => ({ name }))].map((s) => ({ ...s, name: expandName(s.name, request.variables) }));
    for (const s of services) checkAllowed(s.name, o.allowed_services, 'allowed_services', 'service', '[runners.kubernetes]');
    let api: KubeApi;
    try {
      api = new KubeApi(connect(o));
    } catch (error) {
      if (error instanceof KubernetesConfigError) throw new ExecutorSetupError('KUBERNETES_CONFIG', error.message, { cause: error });
      throw error;
    }
    const owner = this.options.owner ?? currentOwner();
    const pod = `ci-runner-${build.id}-${randomBytes(3).toString('hex')}`;
    const labels = jobLabels(this.options.runnerToken, build.id, request.slot, owner);
    const namespace = o.namespace;
    const job: JobState = { api, namespace, pod, secrets: [], slotDir: request.slotDir, projectDir: request.projectDir, stateDir: request.stateDir, synced: false };
    this.job = job;
    request.log(`Using Kubernetes namespace: ${namespace}`);
    request.log(`Using Kubernetes executor with image ${image} ...`);
    const plan: PodPlan = {
      name: pod,
      namespace,
      labels,
      annotations: {
        [`${LABEL_PREFIX}/job-name`]: build.name,
        [`${LABEL_PREFIX}/project`]: labelValue(build.project_name || String(build.project_id)),
        ...(owner.pod ? { [OWNER_POD_ANNOTATION]: `${owner.pod.namespace}/${owner.pod.name}` } : {}),
      },
      image,
      ...(build.options.imageEntrypoint ? { entrypoint: build.options.imageEntrypoint } : {}),
      services: services.map((s) => {
        const { valid } = serviceHostnames(serviceAliases(s));
        // The names made from the image may not be host names (`group__image`); an alias that is not is the user's to know.
        const refused = serviceHostnames(serviceAliases(s).filter((a) => !serviceAliases({ name: s.name }).includes(a))).refused;
        if (refused.length > 0) request.warn(`WARNING: service ${s.name}: the alias ${refused.map((a) => `"${a}"`).join(', ')} cannot be a host name in Kubernetes; reach the service by another alias or at localhost`);
        return { ...s, hostnames: valid };
      }),
      terminationGraceSeconds: this.graceSeconds(),
    };
    const createSecret = async (secretName: string, body: Parameters<KubeApi['core']['createNamespacedSecret']>[0]['body']): Promise<void> => {
      await api.call(`creating secret ${secretName}`, request.signal, (c) => api.core.createNamespacedSecret({ namespace, body }, c));
      job.secrets.push(secretName);
    };
    if (services.length > 0) {
      const env = serviceEnvironment(request.variables, [build.token, this.options.runnerToken]);
      plan.serviceEnvSecret = `${pod}-services`;
      await createSecret(plan.serviceEnvSecret, environmentSecret(plan.serviceEnvSecret, namespace, labels, env));
    }
    const dockerConfig = registryConfig(build.credentials);
    if (dockerConfig) {
      plan.registrySecret = `${pod}-registry`;
      await createSecret(plan.registrySecret, registrySecret(plan.registrySecret, namespace, labels, dockerConfig));
    }
    await this.startPod(job, plan, request);
  }

  /** Creates the pod and waits for it, once per pull policy while the image cannot be pulled. */
  private async startPod(job: JobState, plan: PodPlan, request: PrepareRequest): Promise<void> {
    const o = this.options.kubernetes;
    const policies: Array<KubernetesPullPolicy | undefined> = o.pull_policy.length > 0 ? o.pull_policy : [undefined];
    const started = Date.now();
    for (const [i, policy] of policies.entries()) {
      // A retry gets a name of its own: the pod it replaces may still be terminating.
      job.pod = i === 0 ? plan.name : `${plan.name}-${i}`;
      const body: V1Pod = podSpec({ ...plan, name: job.pod, ...(policy ? { pullPolicy: policy } : {}) }, o);
      await job.api.call(`creating pod ${job.pod}`, request.signal, (c) => job.api.core.createNamespacedPod({ namespace: job.namespace, body }, c)).catch((error: unknown) => {
        request.signal.throwIfAborted();
        throw new ExecutorSetupError('POD_CREATE', (error as Error).message, { cause: error });
      });
      this.podCreated = true;
      const verdict = await waitForPod(job.api, { namespace: job.namespace, name: job.pod, pollIntervalS: o.poll_interval, pollTimeoutS: o.poll_timeout, log: request.log, signal: request.signal });
      if (verdict.kind === 'running') {
        this.podRan = true;
        request.log(`Running in pod ${job.namespace}/${job.pod} (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
        for (const { detail } of verdict.exited) request.warn(`WARNING: service ${detail} before the job started`);
        return;
      }
      const next = policies[i + 1];
      if (!next) throw new ExecutorSetupError('IMAGE_UNAVAILABLE', `pod ${job.namespace}/${job.pod}: ${verdict.reason}`);
      request.warn(`WARNING: ${verdict.reason}; trying again with pull_policy = ${next}`);
      await this.deletePod(job, 0);
    }
  }

  async runStage(request: StageRequest): Promise<StageResult> {
    const job = this.job;
    if (!job) throw new Error('kubernetes executor: runStage before prepare');
    const name = `${request.stage}-${randomBytes(4).toString('hex')}`;
    const scriptPath = join(request.scriptDir, `${name}.sh`);
    const tarPath = join(request.scriptDir, `${name}.tar`);
    // The script (with the job's variables), the file variables it names, and the checkout once.
    const script = generateScript({ shell: 'sh', variables: request.variables, workDir: request.workDir, commands: request.commands, echoCommands: request.echoCommands, ...(request.debugTrace ? { debugTrace: true } : {}) });
    await writeFile(scriptPath, script, { mode: 0o600 });
    try {
      const podStateDir = this.buildPath(request.scriptDir);
      const fileVariables = request.variables.filter((v) => v.value.startsWith(`${podStateDir}/`)).map((v) => join(request.scriptDir, v.value.slice(podStateDir.length + 1)));
      const paths = [...(job.synced ? [] : [job.projectDir]), scriptPath, ...new Set(fileVariables)].map((p) => relative(job.slotDir, p));
      const size = await packPaths(job.slotDir, paths, tarPath);
      job.synced = true;
      return await runPodStage(
        {
          connection: job.api.connection,
          target: { namespace: job.namespace, pod: job.pod, container: BUILD_CONTAINER },
          script: this.buildPath(scriptPath),
          pidFile: `${POD_BUILDS_DIR}/.${basename(name)}.pid`,
          input: { path: tarPath, size },
          killGraceMs: this.options.killGraceMs,
        },
        request,
      );
    } finally {
      await rm(scriptPath, { force: true });
      await rm(tarPath, { force: true });
    }
  }

  /** Brings the build's work back into the runner's project dir (before archive_cache and upload_artifacts). */
  async collect(signal: AbortSignal): Promise<void> {
    const job = this.job;
    if (!job?.synced) return;
    await collectProject({
      connection: job.api.connection,
      target: { namespace: job.namespace, pod: job.pod, container: BUILD_CONTAINER },
      podProjectDir: this.buildPath(job.projectDir),
      projectDir: job.projectDir,
      scratchDir: job.stateDir,
      signal,
    });
  }

  async cleanup(): Promise<void> {
    const job = this.job;
    try {
      // A pod that never ran has nothing to stop gracefully; Kubernetes 1.20's kubelet may also hold
      // one whose image it could not get in Terminating for minutes.
      if (job && this.podCreated) await this.deletePod(job, this.podRan ? this.graceSeconds() : 0);
      for (const name of job?.secrets ?? []) {
        await job?.api.call(`deleting secret ${name}`, undefined, (c) => job.api.core.deleteNamespacedSecret({ name, namespace: job.namespace }, c)).catch((error: unknown) => {
          if (!isNotFound(error)) this.warn(error, `deleting secret ${name} failed`);
        });
      }
    } finally {
      await this.host.cleanup();
    }
  }

  /** `pod_termination_grace_period_seconds`, else the runner's kill_grace_period. */
  private graceSeconds(): number {
    return this.options.kubernetes.pod_termination_grace_period_seconds ?? Math.ceil(this.options.killGraceMs / 1000);
  }

  private async deletePod(job: JobState, graceSeconds: number): Promise<void> {
    await job.api.call(`deleting pod ${job.pod}`, undefined, (c) => job.api.core.deleteNamespacedPod({ name: job.pod, namespace: job.namespace, gracePeriodSeconds: graceSeconds }, c)).catch((error: unknown) => {
      if (!isNotFound(error)) this.warn(error, `deleting pod ${job.pod} failed`);
    });
  }

  private warn(error: unknown, message: string): void {
    this.options.logger?.warn({ err: error }, message);
  }
}
