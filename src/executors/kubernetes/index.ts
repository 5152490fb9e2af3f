/**
 * The kubernetes executor: each job is one pod in `[runners.kubernetes] namespace` (or the one the job
 * may choose, or its own), its build container from the job's image and its services as sidecars
 * (pod-spec.ts, job-plan.ts). The pod needs no route to the coordinator: get_sources runs on the
 * runner (`host`), artifacts and cache are the runner's, and files cross through exec (transfer.ts):
 * the checkout into the pod with the first stage, the build's work back out before the runner archives
 * it (`collect`). Every stage is one exec (stage.ts). The pod starts while the runner fetches the
 * sources (`prepare` creates it, `ready` waits for it). The pod, its secrets and whatever else the job
 * made carry the job's labels and are deleted in `cleanup`, whatever the outcome, within
 * `cleanup_resources_timeout`.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from '../../log/index.js';
import { serviceEnvironment } from '../common/service-variables.js';
import { pathUnderBuildsDir } from '../common/build-path.js';
import { dockerAuthConfig } from '../common/docker-auth-config.js';
import { fileVariablePaths } from '../common/file-variables.js';
import { generateScript } from '../common/script.js';
import type { Executor, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, KubeApi } from './api.js';
import { connect, KubernetesConfigError } from './connection.js';
import { JobPod } from './job-pod.js';
import { planJob, type JobPlan } from './job-plan.js';
import { checkResources, createDisruptionBudget, createNamespace, deleteDisruptionBudget, deleteNamespace } from './job-resources.js';
import { currentOwner, LABELS, type Owner } from './labels.js';
import type { KubernetesOptions } from './options.js';
import { patchPodSpec } from './pod-patch.js';
import type { NamespaceRecord } from './namespace-record.js';
import { BUILD_CONTAINER, podSpec, POD_BUILDS_DIR, serviceSecretKey, type PodPlan } from './pod-spec.js';
import { environmentSecret, registryConfig, registrySecret } from './secrets.js';
import { runPodStage } from './stage.js';
import { collectProject, DEFAULT_COLLECT_LIMIT_BYTES, packPaths, type CollectLimit } from './transfer.js';

export interface KubernetesExecutorOptions {
  kubernetes: KubernetesOptions;
  runnerToken: string;
  /** The entry's `name`, for GitLab Runner's `manager.runner.gitlab.com/name` label. */
  runnerName?: string;
  /** Time between SIGTERM and SIGKILL, ms: for a stopped stage, and the pod's grace period unless configured. */
  killGraceMs: number;
  /** Runs get_sources on the runner (a shell executor). */
  host: Executor;
  /** `artifacts_extract_limit` (bytes, 0: not set): also the most the copy-back may bring from the pod. */
  extractLimitBytes?: number;
  /** Who this runner process is (leftovers.ts); default from POD_NAME/POD_NAMESPACE or the host name. */
  owner?: Owner;
  /** Where the namespaces jobs use besides `namespace` are noted, for the start-up sweep (namespace-record.ts). */
  namespaceRecord?: NamespaceRecord;
  logger?: Logger;
}

interface JobState {
  api: KubeApi;
  namespace: string;
  /** Made at the end of prepare. */
  pod?: JobPod;
  secrets: string[];
  /** The job's own namespace, when `namespace_per_job` made one. */
  ownNamespace?: string;
  /** The PodDisruptionBudget made for the pod. */
  disruptionBudget?: string;
  slotDir: string;
  projectDir: string;
  stateDir: string;
  /** The checkout went into the pod (with the first stage). */
  synced: boolean;
}

export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes';
  readonly buildsDir = POD_BUILDS_DIR;
  readonly host: Executor;
  readonly marker: string | undefined;
  private job: JobState | undefined;

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.host = options.host;
    this.marker = options.host.marker;
  }

  buildPath(hostPath: string): string {
    return pathUnderBuildsDir(hostPath, this.job?.slotDir, POD_BUILDS_DIR);
  }

  async prepare(request: PrepareRequest): Promise<void> {
    const o = this.options.kubernetes;
    const owner = this.options.owner ?? currentOwner();
    const plan = planJob({ o, request, owner, runnerToken: this.options.runnerToken, runnerName: this.options.runnerName ?? '', terminationGraceSeconds: this.graceSeconds() });
    let api: KubeApi;
    try {
      api = new KubeApi(connect(o, process.env, plan.pod.overwrites.bearerToken), { limit: o.retry_limit, backoffMaxMs: o.retry_backoff_max, limits: o.retry_limits });
    } catch (error) {
      if (error instanceof KubernetesConfigError) throw new ExecutorSetupError('KUBERNETES_CONFIG', error.message, { cause: error });
      throw error;
    }
    const { namespace } = plan.pod;
    if (namespace !== o.namespace) await this.options.namespaceRecord?.add(namespace).catch((error: unknown) => this.warn(error, `noting namespace ${namespace} for the start-up sweep failed`));
    const job: JobState = { api, namespace, secrets: [], slotDir: request.slotDir, projectDir: request.projectDir, stateDir: request.stateDir, synced: false };
    this.job = job;
    if (o.namespace_per_job) {
      await createNamespace(api, namespace, plan.ownLabels, request.signal);
      job.ownNamespace = namespace;
    }
    request.log(`Using Kubernetes namespace: ${namespace}`);
    request.log(`Using Kubernetes executor with image ${plan.pod.image} ...`);
    const pullSecrets = o.use_service_account_image_pull_secrets ? [] : o.image_pull_secrets;
    await checkResources(api, { namespace, ...(plan.pod.overwrites.serviceAccount ? { serviceAccount: plan.pod.overwrites.serviceAccount } : {}), pullSecrets, attempts: o.resource_availability_check_max_attempts, signal: request.signal });
    await this.createSecrets(job, plan, request);
    // The pod starts while the runner fetches the sources; `ready` waits for it.
    job.pod = new JobPod(api, plan.pod, { spec: (name, attempt) => this.spec({ ...plan.pod, name }, attempt, plan, request), created: (pod, signal) => this.podCreated(job, pod, plan, signal) }, o, { log: request.log, warn: request.warn }, request.signal);
  }

  /** One attempt's pod: the spec, then the `pod_spec` patches where they apply. */
  private async spec(pod: PodPlan, attempt: Record<string, number>, plan: JobPlan, request: PrepareRequest): Promise<V1Pod> {
    const o = this.options.kubernetes;
    const body = podSpec(pod, o, attempt);
    if (!plan.patchPodSpec || !body.spec) return body;
    return { ...body, spec: await patchPodSpec(body.spec, o.pod_spec, request.warn) };
  }

  /** Once a pod exists: its PodDisruptionBudget (the first pod's; later ones carry the same labels). */
  private async podCreated(job: JobState, pod: V1Pod, plan: JobPlan, signal: AbortSignal): Promise<void> {
    if (!this.options.kubernetes.pod_disruption_budget || job.disruptionBudget) return;
    const selector = { [LABELS.runner]: plan.ownLabels[LABELS.runner] ?? '', [LABELS.job]: plan.ownLabels[LABELS.job] ?? '' };
    job.disruptionBudget = await createDisruptionBudget(job.api, pod, selector, signal);
  }

  /** The services' environment and the job's registry credentials, as Secrets the pod refers to. */
  private async createSecrets(job: JobState, plan: JobPlan, request: PrepareRequest): Promise<void> {
    const { build } = request;
    const { api, namespace } = job;
    const pod = plan.pod;
    const create = async (name: string, body: V1Secret): Promise<string> => {
      await api.call(`creating secret ${name}`, request.signal, (c) => api.core.createNamespacedSecret({ namespace, body }, c)).catch((error: unknown) => {
        request.signal.throwIfAborted();
        throw new ExecutorSetupError('SECRET_CREATE', (error as Error).message, { cause: error });
      });
      job.secrets.push(name);
      return name;
    };
    if (pod.services.length > 0) {
      const secrets = [build.token, this.options.runnerToken];
      const env = serviceEnvironment(request.variables, secrets);
      // Each service's own variables, under keys of their own (pod-spec.ts's serviceSecretKey).
      plan.serviceOwn.forEach((own, i) => {
        for (const [name, value] of Object.entries(serviceEnvironment(own, secrets))) env[serviceSecretKey(i, name)] = value;
      });
      pod.serviceEnvSecret = await create(`${pod.name}-services`, environmentSecret(`${pod.name}-services`, namespace, plan.ownLabels, env));
    }
    const authConfig = dockerAuthConfig(request.variables.findLast((v) => v.key === 'DOCKER_AUTH_CONFIG')?.value);
    for (const line of authConfig.warnings) request.warn(`WARNING: ${line}`);
    if (Object.keys(authConfig.auths).length > 0) request.log(`Authenticating with credentials from $DOCKER_AUTH_CONFIG for ${Object.keys(authConfig.auths).join(', ')}`);
    const dockerConfig = registryConfig(build.credentials, authConfig.auths);
    if (dockerConfig) pod.registrySecret = await create(`${pod.name}-registry`, registrySecret(`${pod.name}-registry`, namespace, plan.ownLabels, dockerConfig));
  }

  async ready(signal: AbortSignal): Promise<void> {
    const pod = this.job?.pod;
    if (!pod) throw new Error('kubernetes executor: ready before prepare');
    pod.release();
    signal.throwIfAborted();
    await pod.started;
  }

  async runStage(request: StageRequest): Promise<StageResult> {
    const job = this.job;
    const pod = job?.pod;
    if (!job || !pod) throw new Error('kubernetes executor: runStage before prepare');
    await pod.started;
    const name = `${request.stage}-${randomBytes(4).toString('hex')}`;
    const scriptPath = join(request.scriptDir, `${name}.sh`);
    const tarPath = join(request.scriptDir, `${name}.tar`);
    // The script (with the job's variables), the file variables it names, and the checkout once.
    const script = generateScript({ shell: 'sh', variables: request.variables, workDir: request.workDir, commands: request.commands, echoCommands: request.echoCommands, ...(request.debugTrace ? { debugTrace: true } : {}) });
    await writeFile(scriptPath, script, { mode: 0o600 });
    try {
      // File variables: the files the job runner wrote (ExportedVariable.file), never a path read from a value.
      // The checkout goes in with the first stage that runs after get_sources.
      const sync = !job.synced && !request.beforeSources;
      const paths = [...(sync ? [job.projectDir] : []), scriptPath, ...fileVariablePaths(request.variables)].map((p) => relative(job.slotDir, p));
      const size = await packPaths(job.slotDir, paths, tarPath);
      if (sync) job.synced = true;
      const run = { connection: job.api.connection, target: { namespace: job.namespace, pod: pod.name, container: BUILD_CONTAINER }, script: this.buildPath(scriptPath), pidFile: `${POD_BUILDS_DIR}/.${basename(name)}.pid`, input: { path: tarPath, size }, killGraceMs: this.options.killGraceMs };
      return await runPodStage(run, request).catch(async (error: unknown) => {
        // An exec that fails because the container ended (its entrypoint exited, it was OOM-killed) says so.
        const ended = await pod.whyEnded();
        throw ended ? new ExecutorSetupError('POD_ENDED', `pod ${job.namespace}/${pod.name}: ${ended}`, { cause: error }) : error;
      });
    } finally {
      await rm(scriptPath, { force: true });
      await rm(tarPath, { force: true });
    }
  }

  /** Brings the build's work back into the runner's project dir (before archive_cache and upload_artifacts). */
  async collect(signal: AbortSignal, warn: (line: string) => void): Promise<void> {
    const job = this.job;
    if (!job?.synced || !job.pod) return;
    await collectProject({
      connection: job.api.connection,
      target: { namespace: job.namespace, pod: job.pod.name, container: BUILD_CONTAINER },
      podProjectDir: this.buildPath(job.projectDir),
      projectDir: job.projectDir,
      scratchDir: job.stateDir,
      signal,
      warn,
      limit: collectLimit(this.options.extractLimitBytes ?? 0),
    });
  }

  /** Deletes what the job made: pod, secrets, PodDisruptionBudget, its own namespace; within `cleanup_resources_timeout`. */
  async cleanup(): Promise<void> {
    const job = this.job;
    const o = this.options.kubernetes;
    const signal = AbortSignal.timeout(o.cleanup_resources_timeout);
    try {
      if (job?.pod) {
        job.pod.abandon();
        await job.pod.started.catch(() => undefined);
        // A pod that never ran has nothing to stop gracefully; Kubernetes 1.20's kubelet may also hold
        // one whose image it could not get in Terminating for minutes.
        const failed = await job.pod.delete(o.cleanup_grace_period_seconds ?? this.graceSeconds(), signal);
        if (failed) this.warn(failed, `deleting pod ${job.pod.name} failed`);
      }
      for (const name of job?.secrets ?? []) {
        await job?.api.call(`deleting secret ${name}`, signal, (c) => job.api.core.deleteNamespacedSecret({ name, namespace: job.namespace }, c)).catch((error: unknown) => {
          if (!isNotFound(error)) this.warn(error, `deleting secret ${name} failed`);
        });
      }
      if (job?.disruptionBudget) await deleteDisruptionBudget(job.api, job.namespace, job.disruptionBudget, signal).catch((error: unknown) => this.warn(error, `deleting PodDisruptionBudget ${job.disruptionBudget} failed`));
      if (job?.ownNamespace) await deleteNamespace(job.api, job.ownNamespace, signal).catch((error: unknown) => this.warn(error, `deleting namespace ${job.ownNamespace} failed`));
    } finally {
      await this.host.cleanup();
    }
  }

  /** `pod_termination_grace_period_seconds`, else the runner's kill_grace_period. */
  private graceSeconds(): number {
    return this.options.kubernetes.pod_termination_grace_period_seconds ?? Math.ceil(this.options.killGraceMs / 1000);
  }

  private warn(error: unknown, message: string): void {
    this.options.logger?.warn({ err: error }, message);
  }
}

/** The copy-back's budget: `artifacts_extract_limit` when set, else a default a build does not reach. */
function collectLimit(extractLimitBytes: number): CollectLimit {
  return extractLimitBytes > 0
    ? { bytes: extractLimitBytes, setting: 'artifacts_extract_limit' }
    : { bytes: DEFAULT_COLLECT_LIMIT_BYTES, setting: 'the copy-back\'s limit when artifacts_extract_limit is not set' };
}
