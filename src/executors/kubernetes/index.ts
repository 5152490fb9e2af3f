/**
 * The kubernetes executor: each job is one pod in `[runners.kubernetes] namespace`, its build
 * container from the job's image and its services as sidecars (pod-spec.ts). The pod needs no route
 * to the coordinator: get_sources runs on the runner (`host`), artifacts and cache are the runner's,
 * and files cross through exec (transfer.ts): the checkout into the pod with the first stage, the
 * build's work back out before the runner archives it (`collect`). Every stage is one exec (stage.ts).
 * The pod starts while the runner fetches the sources (`prepare` creates it, `ready` waits for it).
 * The pod and its secrets carry the job's labels and are deleted in `cleanup`, whatever the outcome.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from '../../log/index.js';
import type { ServiceOptions } from '../../protocol/types.js';
import { expandName, checkAllowed } from '../docker/image.js';
import { serviceAliases, serviceEnvironment } from '../docker/services.js';
import { pathUnderBuildsDir } from '../build-path.js';
import { fileVariablePaths } from '../file-variables.js';
import { generateScript } from '../shell/script.js';
import type { Executor, ExportedVariable, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import { isNotFound, KubeApi } from './api.js';
import { connect, KubernetesConfigError } from './connection.js';
import { currentOwner, jobLabels, LABEL_PREFIX, labelValue, OWNER_POD_ANNOTATION, type Owner } from './labels.js';
import { JobPod } from './job-pod.js';
import type { KubernetesOptions, KubernetesPullPolicy, KubernetesService } from './options.js';
import { BUILD_CONTAINER, POD_BUILDS_DIR, serviceHostnames, serviceSecretKey, type PodPlan } from './pod-spec.js';
import { kubernetesUser, serviceOwnVariables } from '../executor-opts.js';
import { dockerAuthConfig } from '../docker-auth-config.js';
import { environmentSecret, registryConfig, registrySecret } from './secrets.js';
import { runPodStage } from './stage.js';
import { collectProject, DEFAULT_COLLECT_LIMIT_BYTES, packPaths, type CollectLimit } from './transfer.js';

export interface KubernetesExecutorOptions {
  kubernetes: KubernetesOptions;
  runnerToken: string;
  /** Time between SIGTERM and SIGKILL, ms: for a stopped stage, and the pod's grace period unless configured. */
  killGraceMs: number;
  /** Runs get_sources on the runner (a shell executor). */
  host: Executor;
  /** `artifacts_extract_limit` (bytes, 0: not set): also the most the copy-back may bring from the pod. */
  extractLimitBytes?: number;
  /** Who this runner process is (leftovers.ts); default from POD_NAME/POD_NAMESPACE or the host name. */
  owner?: Owner;
  logger?: Logger;
}

interface JobState {
  api: KubeApi;
  namespace: string;
  /** Made at the end of prepare. */
  pod?: JobPod;
  secrets: string[];
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
    const { build } = request;
    const image = expandName(build.options.image ?? '', request.variables) || o.image;
    if (!image) throw new ExecutorSetupError('NO_IMAGE', 'no image: the job names none and [runners.kubernetes] image is not set');
    checkAllowed(image, o.allowed_images, 'allowed_images', 'image', '[runners.kubernetes]');
    // v4 sends the job's services as objects (alias, entrypoint, command); v1 by name.
    const specs: ServiceOptions[] = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
    const jobServices: KubernetesService[] = specs.map(({ name, alias, entrypoint, command, executor_opts: opts, variables }) => ({
      name,
      ...(alias ? { alias } : {}),
      ...(entrypoint ? { entrypoint } : {}),
      ...(command ? { command } : {}),
      runAs: kubernetesUser(opts, request.variables, `service ${name}`),
      ...(variables && variables.length > 0 ? { ownVariables: variables.map((v) => v.key).filter((key) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) } : {}),
    }));
    const serviceOwn = [...o.services.map(() => []), ...specs.map((s) => serviceOwnVariables(s.variables, request.variables))];
    const services = [...o.services, ...jobServices].map((s) => ({ ...s, name: expandName(s.name, request.variables) }));
    for (const s of services) checkAllowed(s.name, o.allowed_services, 'allowed_services', 'service', '[runners.kubernetes]');
    let api: KubeApi;
    try {
      api = new KubeApi(connect(o));
    } catch (error) {
      if (error instanceof KubernetesConfigError) throw new ExecutorSetupError('KUBERNETES_CONFIG', error.message, { cause: error });
      throw error;
    }
    const owner = this.options.owner ?? currentOwner();
    const podName = `ci-runner-${build.id}-${randomBytes(3).toString('hex')}`;
    const labels = jobLabels(this.options.runnerToken, build.id, request.slot, owner);
    const namespace = o.namespace;
    const job: JobState = { api, namespace, secrets: [], slotDir: request.slotDir, projectDir: request.projectDir, stateDir: request.stateDir, synced: false };
    this.job = job;
    request.log(`Using Kubernetes namespace: ${namespace}`);
    request.log(`Using Kubernetes executor with image ${image} ...`);
    const plan: PodPlan = {
      name: podName,
      namespace,
      labels,
      annotations: {
        [`${LABEL_PREFIX}/job-name`]: build.name,
        [`${LABEL_PREFIX}/project`]: labelValue(build.project_name || String(build.project_id)),
        ...(owner.pod ? { [OWNER_POD_ANNOTATION]: `${owner.pod.namespace}/${owner.pod.name}` } : {}),
      },
      image,
      ...(build.options.imageEntrypoint ? { entrypoint: build.options.imageEntrypoint } : {}),
      runAs: kubernetesUser(build.options.imageExecutorOpts, request.variables, 'image'),
      ...jobPullPolicies(o.pull_policy, build.options.imagePullPolicy),
      services: services.map((s) => withHostnames(s, request.warn)),
      terminationGraceSeconds: this.graceSeconds(),
    };
    await this.createSecrets(job, plan, request, serviceOwn);
    // The pod starts while the runner fetches the sources; `ready` waits for it.
    job.pod = new JobPod(api, plan, o, { log: request.log, warn: request.warn }, request.signal);
  }

  /** The services' environment and the job's registry credentials, as Secrets the pod refers to. */
  private async createSecrets(job: JobState, plan: PodPlan, request: PrepareRequest, serviceOwn: ExportedVariable[][]): Promise<void> {
    const { build } = request;
    const { api, namespace } = job;
    const create = async (name: string, body: V1Secret): Promise<string> => {
      await api.call(`creating secret ${name}`, request.signal, (c) => api.core.createNamespacedSecret({ namespace, body }, c)).catch((error: unknown) => {
        request.signal.throwIfAborted();
        throw new ExecutorSetupError('SECRET_CREATE', (error as Error).message, { cause: error });
      });
      job.secrets.push(name);
      return name;
    };
    if (plan.services.length > 0) {
      const secrets = [build.token, this.options.runnerToken];
      const env = serviceEnvironment(request.variables, secrets);
      // Each service's own variables, under keys of their own (pod-spec.ts's serviceSecretKey).
      serviceOwn.forEach((own, i) => {
        for (const [name, value] of Object.entries(serviceEnvironment(own, secrets))) env[serviceSecretKey(i, name)] = value;
      });
      plan.serviceEnvSecret = await create(`${plan.name}-services`, environmentSecret(`${plan.name}-services`, namespace, plan.labels, env));
    }
    const authConfig = dockerAuthConfig(request.variables.findLast((v) => v.key === 'DOCKER_AUTH_CONFIG')?.value);
    for (const line of authConfig.warnings) request.warn(`WARNING: ${line}`);
    if (Object.keys(authConfig.auths).length > 0) request.log(`Authenticating with credentials from $DOCKER_AUTH_CONFIG for ${Object.keys(authConfig.auths).join(', ')}`);
    const dockerConfig = registryConfig(build.credentials, authConfig.auths);
    if (dockerConfig) plan.registrySecret = await create(`${plan.name}-registry`, registrySecret(`${plan.name}-registry`, namespace, plan.labels, dockerConfig));
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

  async cleanup(): Promise<void> {
    const job = this.job;
    try {
      if (job?.pod) {
        job.pod.abandon();
        await job.pod.started.catch(() => undefined);
        // A pod that never ran has nothing to stop gracefully; Kubernetes 1.20's kubelet may also hold
        // one whose image it could not get in Terminating for minutes.
        const failed = await job.pod.delete(this.graceSeconds());
        if (failed) this.warn(failed, `deleting pod ${job.pod.name} failed`);
      }
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

/**
 * A service with the names it answers to: GitLab Runner's aliases where Kubernetes takes them as host
 * names. The names made from the image often are not (`group__image`); an alias the user gave that is
 * not gets a warning.
 */
/**
 * The job's `image: { pull_policy }`, tried in order instead of the runner's: only policies the
 * runner's `pull_policy` lists (when it lists any), as GitLab Runner allows them.
 */
function jobPullPolicies(runner: readonly KubernetesPullPolicy[], job: readonly KubernetesPullPolicy[] | undefined): { pullPolicies?: KubernetesPullPolicy[] } {
  if (!job || job.length === 0) return {};
  const refused = runner.length > 0 ? job.filter((policy) => !runner.includes(policy)) : [];
  if (refused.length > 0) {
    throw new ExecutorSetupError('PULL_POLICY_NOT_ALLOWED', `the image's pull_policy ${refused.join(', ')} is not allowed by [runners.kubernetes] pull_policy (${runner.join(', ')})`);
  }
  return { pullPolicies: [...job] };
}

function withHostnames(service: KubernetesService, warn: (line: string) => void): KubernetesService & { hostnames: string[] } {
  const all = serviceAliases(service);
  const derived = serviceAliases({ name: service.name });
  const refused = serviceHostnames(all.filter((alias) => !derived.includes(alias))).refused;
  if (refused.length > 0) warn(`WARNING: service ${service.name}: the alias ${refused.map((a) => `"${a}"`).join(', ')} cannot be a host name in Kubernetes; reach the service by another alias or at localhost`);
  return { ...service, hostnames: serviceHostnames(all).valid };
}
