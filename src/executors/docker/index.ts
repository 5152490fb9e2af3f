/**
 * The docker executor: build_script and after_script run in containers of the job's image, each stage
 * its own `docker run`, with the slot's project dir bind-mounted at `/builds/<namespace>/<project>`.
 * get_sources runs on the host through a shell executor (`host`); artifacts and cache are the runner's.
 * An image with a non-root USER runs the script as that user (image-user.ts).
 * Services run on a network made for the job. Everything carries the job's labels and is removed in
 * `cleanup`, whatever the outcome.
 */
import { randomBytes } from 'node:crypto';
import { lstat, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../log/index.js';
import type { ServiceOptions } from '../../protocol/types.js';
import { writeNewFile } from '../../util/new-file.js';
import { timed, type MarkStep } from '../../util/timeline.js';
import { pathUnderBuildsDir } from '../build-path.js';
import { fileVariablePaths } from '../file-variables.js';
import { ShellExecutor } from '../shell/index.js';
import { writeStageScript, type ShellName } from '../shell/script.js';
import type { Executor, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { DockerCli } from './cli.js';
import { containerFlags } from './create-args.js';
import { createStartedMarker, entrypointFor, notStartedMessage, shellStarted, type Entrypoint } from './entrypoint.js';
import { ImageCache } from './image-cache.js';
import { checkAllowed, checkImageName, ensureImage, expandName, pullPolicies, selectImage, type LocalImage } from './image.js';
import { chownInImage, imageUser, type Ids } from './image-user.js';
import { jobLabelArgs } from './labels.js';
import type { DockerOptions } from './options.js';
import { splitServiceEnv } from './service-env.js';
import { jobDockerConfig } from './registry-auth.js';
import { dockerAuthConfig } from '../docker-auth-config.js';
import { healthcheckPort, serviceEnvironment, serviceRunArgs, waitForServices, type StartedService } from './services.js';
import { dockerOpts, serviceOwnVariables } from '../executor-opts.js';
import { runStageContainer } from './stage-container.js';

/** Where the slot dir appears in the container (GitLab Runner's path). */
export const CONTAINER_BUILDS_DIR = '/builds';

export interface DockerExecutorOptions {
  docker: DockerOptions;
  runnerToken: string;
  /** Time between SIGTERM and SIGKILL, ms. */
  killGraceMs: number;
  /** Shell for the host stages (get_sources). */
  hostShell: ShellName;
  /** The daemon's inspected images, shared by its jobs (image-cache.ts); default: this job's own. */
  images?: ImageCache;
  /** Uid/gid files written in the project dir are handed back to; default: ours when we are not root. */
  owner?: { uid: number; gid: number };
  logger?: Logger;
}

interface JobState {
  id: number;
  prefix: string;
  labels: string[];
  image: string;
  slotDir: string;
  projectDir: string;
  stateDir: string;
  network?: string;
  /** The image's own user when it is not root. */
  user?: Ids;
  /** `--user` of the build stages: `[runners.docker] user`, else the image's `docker: user`. */
  runUser?: string;
  /** The image's `docker: platform`. */
  platform?: string;
  entrypoint: Entrypoint;
}

export class DockerExecutor implements Executor {
  readonly name = 'docker';
  readonly buildsDir = CONTAINER_BUILDS_DIR;
  readonly host: ShellExecutor;
  readonly marker: string;
  private readonly docker: DockerCli;
  private readonly images: ImageCache;
  private readonly owner: Ids | undefined;
  /** Whom files go back to after a stage that ran as the image's user: the owner, else us. */
  private readonly runnerIds: Ids;
  private job: JobState | undefined;
  /** Containers that may still exist (services, a stage container whose run was interrupted). */
  private readonly containers = new Set<string>();
  private needsOwnerFix = false;
  /** The job's timeline, from prepare on (the executor is the job's). */
  private mark: MarkStep | undefined;

  constructor(private readonly options: DockerExecutorOptions) {
    this.host = new ShellExecutor({ shell: options.hostShell, killGraceMs: options.killGraceMs, ...(options.logger ? { logger: options.logger } : {}) });
    this.marker = this.host.marker;
    this.docker = new DockerCli({
      cli: options.docker.cli,
      ...(options.docker.host ? { host: options.docker.host } : {}),
      onCall: (args, began, exitCode) => this.mark?.(dockerStep(args), began, { exit_code: exitCode }),
    });
    this.images = options.images ?? new ImageCache();
    const uid = process.getuid?.() ?? 0;
    this.owner = options.owner ?? (uid !== 0 ? { uid, gid: process.getgid?.() ?? uid } : undefined);
    this.runnerIds = this.owner ?? { uid, gid: process.getgid?.() ?? 0 };
  }

  buildPath(hostPath: string): string {
    return pathUnderBuildsDir(hostPath, this.job?.slotDir, CONTAINER_BUILDS_DIR);
  }

  async prepare(request: PrepareRequest): Promise<void> {
    const o = this.options.docker;
    const { build } = request;
    this.mark = request.mark;
    const prefix = `ci-runner-${build.id}-${randomBytes(3).toString('hex')}`;
    const image = selectImage(build.options.image, o.image, request.variables);
    checkAllowed(image, o.allowed_images, 'allowed_images', 'image');
    // v4 sends services as objects (alias, command, entrypoint, pull_policy); v1 by name.
    const jobServices = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
    const services = [...o.services, ...jobServices].map((s) => ({ ...s, name: expandName(s.name, request.variables) }));
    for (const s of services) {
      checkImageName(s.name, 'service');
      checkAllowed(s.name, o.allowed_services, 'allowed_services', 'service');
    }
    // The job's `docker: { user, platform }`; the runner's `user` wins, as in GitLab Runner.
    const imageOpts = dockerOpts(build.options.imageExecutorOpts, request.variables, 'image');
    const runUser = o.user ?? imageOpts.user;
    this.job = {
      id: build.id,
      prefix,
      labels: jobLabelArgs(this.options.runnerToken, build.id, request.slot),
      image,
      slotDir: request.slotDir,
      projectDir: request.projectDir,
      stateDir: request.stateDir,
      entrypoint: entrypointFor([], undefined),
      ...(runUser ? { runUser } : {}),
      ...(imageOpts.platform ? { platform: imageOpts.platform } : {}),
    };
    const imagePolicies = pullPolicies(o.pull_policy, build.options.imagePullPolicy, 'image');
    const servicePolicies = services.map((s) => pullPolicies(o.pull_policy, (s as ServiceOptions).pull_policy, `service ${s.name}`));
    // The job's registry logins (DOCKER_AUTH_CONFIG, v4 `credentials`) reach its pulls only, through a config file.
    const authConfig = dockerAuthConfig(request.variables.findLast((v) => v.key === 'DOCKER_AUTH_CONFIG')?.value);
    for (const line of authConfig.warnings) request.warn(`WARNING: ${line}`);
    const env = await jobDockerConfig(request.stateDir, build.credentials, process.env, authConfig.auths);
    if (Object.keys(authConfig.auths).length > 0) request.log(`Authenticating with credentials from $DOCKER_AUTH_CONFIG for ${Object.keys(authConfig.auths).join(', ')}`);
    if (env.DOCKER_CONFIG && build.credentials.length > 0) request.log(`Authenticating with credentials for ${[...new Set(build.credentials.map((c) => c.url))].join(', ')}`);
    request.log(`Using docker image ${image} ...`);
    const local = await ensureImage(this.docker, image, imagePolicies, { log: request.log, signal: request.signal, env, cache: this.images, ...(imageOpts.platform ? { platform: imageOpts.platform } : {}) });
    request.log(`Using docker image ${image} with ID ${local.id}`);
    await this.readImageConfig(this.job, local, request);
    if (services.length === 0) return;
    if (o.network_mode) request.warn(`WARNING: network_mode = "${o.network_mode}": services run on the job's own network and may not be reachable from the build`);
    const network = `${prefix}-network`;
    await this.docker.run(['network', 'create', ...this.job.labels, network], { signal: request.signal });
    this.job.network = network;
    const secrets = [build.token, this.options.runnerToken];
    const started: StartedService[] = [];
    for (const [i, spec] of services.entries()) {
      const job = spec as ServiceOptions;
      const opts = dockerOpts(job.executor_opts, request.variables, `service ${spec.name}`);
      // The job's variables and the service's own (GitLab Runner's GetServiceVariables), in a file.
      const own = serviceOwnVariables(job.variables, request.variables);
      const serviceEnv = splitServiceEnv(serviceEnvironment([...request.variables, ...own], secrets));
      if (serviceEnv.skipped.length > 0) request.warn(`WARNING: not given to service ${spec.name} (multi-line values under names the docker CLI on this machine would read itself): ${serviceEnv.skipped.join(', ')}`);
      const envFile = join(request.stateDir, `service-${i}.env`);
      if (serviceEnv.file) await writeNewFile(envFile, serviceEnv.file, 0o600);
      try {
        request.log(`Starting service ${spec.name} ...`);
        await ensureImage(this.docker, spec.name, servicePolicies[i] ?? o.pull_policy, { log: request.log, signal: request.signal, env, cache: this.images, ...(opts.platform ? { platform: opts.platform } : {}) });
        const container = `${prefix}-service-${i}`;
        this.containers.add(container);
        const args = serviceRunArgs(spec, { container, network, labels: this.job.labels, ...(serviceEnv.file ? { envFile } : {}), byName: Object.keys(serviceEnv.byName), privileged: o.privileged, ...opts });
        await this.docker.run(args, { env: serviceEnv.byName, signal: request.signal });
        started.push({ container, image: spec.name, ...healthcheckPort([...request.variables, ...own]) });
      } finally {
        await rm(envFile, { force: true });
      }
    }
    await waitForServices(this.docker, started, { timeoutS: o.wait_for_services_timeout, log: request.log, warn: request.warn, signal: request.signal });
  }

  /** Whom the build stages run as, and what runs first in their containers. */
  private async readImageConfig(job: JobState, config: LocalImage, request: PrepareRequest): Promise<void> {
    const o = this.options.docker;
    const spec = job.runUser ?? config.user;
    const user = await imageUser(this.docker, job.image, spec, job.labels, request.signal);
    if (user) {
      job.user = user;
      const source = o.user ? '[runners.docker] user' : job.runUser ? 'the job\'s image docker: user' : 'the image\'s USER';
      request.log(`Running the script as ${user.uid}:${user.gid} (${source} "${spec}"), the project directory handed to it for each stage`);
    }
    let replacement = request.build.options.imageEntrypoint;
    if (replacement && o.disable_entrypoint_overwrite) {
      request.warn('WARNING: Entrypoint override disabled ([runners.docker] disable_entrypoint_overwrite): the image\'s own runs');
      replacement = undefined;
    }
    job.entrypoint = entrypointFor(config.entrypoint, replacement);
    const effective = job.entrypoint.effective;
    if (effective.length > 0) request.log(`Using the ENTRYPOINT ${JSON.stringify(effective)}${replacement?.length ? ' of the job\'s image:entrypoint' : ' of the image'}`);
  }

  async runStage(request: StageRequest): Promise<StageResult> {
    const job = this.job;
    if (!job) throw new Error('docker executor: runStage before prepare');
    const scriptPath = await timed(request.mark, `${request.stage}: script written`, () => writeStageScript('sh', request));
    let marker: string | undefined;
    const name = `${job.prefix}-${request.stage.replace(/_/g, '-')}`;
    this.containers.add(name);
    const projectInContainer = this.buildPath(job.projectDir);
    const project: [string, string] = [job.projectDir, projectInContainer];
    // Of the state dir, a stage gets (and the image user is handed) its script and the job's file
    // variables, each mounted on its own: the rest (the trace spool and its delivery record, which a
    // restarted daemon reads again; registry logins) is never in a container, not even the hand-over's,
    // whose root runs the image's own /bin/sh.
    const files = [scriptPath, ...(await this.fileVariables(request))].map((path): [string, string] => [path, this.buildPath(path)]);
    try {
      if (job.user) {
        this.needsOwnerFix = true;
        await chownInImage(this.docker, { image: job.image, labels: job.labels, dirs: [project, ...files], to: job.user, signal: request.signal });
      }
      // Made after the hand-over and bind-mounted as a file (docker would follow a link at its path on
      // this machine).
      if (job.entrypoint.effective.length > 0) marker = await createStartedMarker(scriptPath);
      const result = await runStageContainer(
        {
          docker: this.docker,
          name,
          flags: this.stageFlags(job, files, marker),
          image: job.image,
          script: this.buildPath(scriptPath),
          entrypoint: job.entrypoint,
          ...(marker ? { startedMarker: this.buildPath(marker) } : {}),
          killGraceMs: this.options.killGraceMs,
          ...(this.owner && !job.user ? { owner: { ...this.owner, dir: projectInContainer } } : {}),
        },
        request,
      );
      // Killed, stopped or never started (125: docker's own error): the wrapper may not have handed
      // the files back, and the container may still exist.
      if (result.aborted || result.exitCode === null || result.exitCode === 125 || result.signal !== undefined) this.needsOwnerFix ||= this.owner !== undefined;
      // 125: the container did not start, perhaps because the image is gone: the next job inspects again.
      if (result.exitCode === 125) this.images.forget(this.docker.engine, job.image);
      else this.containers.delete(name);
      // The files stay the image user's: the runner only removes them, which the state dir allows.
      if (job.user) await this.handBack(job, [project]);
      if (marker && !result.aborted && result.exitCode !== null && !(await shellStarted(marker))) {
        request.output(Buffer.from(`\n\x1b[31;1m${notStartedMessage(job.entrypoint.effective, job.image, result.exitCode)}\x1b[0;m\n`));
        return { ...result, exitCode: result.exitCode || 1 };
      }
      return result;
    } finally {
      await rm(scriptPath, { force: true });
      if (marker) await rm(marker, { force: true });
    }
  }

  /**
   * The host files of the job's file variables (ExportedVariable.file, set by the job runner alone),
   * which the stages see at their build paths.
   */
  private async fileVariables(request: StageRequest): Promise<string[]> {
    const found = await Promise.all(
      fileVariablePaths(request.variables).map(async (path) =>
        // Only a file: docker would create a directory (as root) at a host path that does not exist.
        (await lstat(path).catch(() => undefined))?.isFile() ? path : undefined,
      ),
    );
    return found.filter((path): path is string => path !== undefined);
  }

  /** Everything between `docker run` and the image for a build stage; `files` are mounted read-only. */
  private stageFlags(job: JobState, files: Array<[string, string]>, marker: string | undefined): string[] {
    const projectInContainer = this.buildPath(job.projectDir);
    return [
      ...job.labels,
      ...(job.network && !this.options.docker.network_mode ? ['--network', job.network] : []),
      ...containerFlags(this.options.docker),
      ...(job.runUser ? ['--user', job.runUser] : []),
      ...(job.platform ? ['--platform', job.platform] : []),
      '--volume', `${job.projectDir}:${projectInContainer}`,
      ...files.flatMap(([host, inContainer]) => ['--volume', `${host}:${inContainer}:ro`]),
      // The one file the wrapper writes outside the checkout.
      ...(marker ? ['--volume', `${marker}:${this.buildPath(marker)}`] : []),
      '--workdir', projectInContainer,
    ];
  }

  /** After a stage as the image's user; on failure cleanup tries again (needsOwnerFix stays set). */
  private async handBack(job: JobState, dirs: Array<[string, string]>): Promise<void> {
    await chownInImage(this.docker, { image: job.image, labels: job.labels, dirs, to: this.runnerIds }).then(
      () => void (this.needsOwnerFix = false),
      (error: unknown) => this.warn(error, `handing ${basename(job.projectDir)} back to uid ${this.runnerIds.uid} failed; cleanup tries again`),
    );
  }

  async cleanup(): Promise<void> {
    const job = this.job;
    try {
      if (job && this.needsOwnerFix) await this.fixOwner(job, this.runnerIds);
      if (this.containers.size > 0) await this.docker.run(['rm', '--force', '--volumes', ...this.containers]).catch((error: unknown) => this.warn(error, 'removing the job\'s containers failed'));
      this.containers.clear();
      if (job?.network) await this.docker.run(['network', 'rm', job.network]).catch((error: unknown) => this.warn(error, 'removing the job\'s network failed'));
    } finally {
      await this.host.cleanup();
    }
  }

  /** A stage stopped before its wrapper could hand files back: a short container does it. */
  private async fixOwner(job: JobState, owner: Ids): Promise<void> {
    // The checkout alone: the state dir was never handed over (see runStage).
    await chownInImage(this.docker, { image: job.image, labels: job.labels, dirs: [[job.projectDir, this.buildPath(job.projectDir)]], to: owner })
      .catch((error: unknown) => this.warn(error, `handing ${basename(job.projectDir)} back to uid ${owner.uid} failed`));
  }

  private warn(error: unknown, message: string): void {
    this.options.logger?.warn({ err: error }, message);
  }
}

/** A docker call as a timeline step: `docker run`, `docker image inspect`, `docker network create`. */
function dockerStep(args: readonly string[]): string {
  const [verb, object] = args;
  return ['image', 'network', 'container', 'volume'].includes(verb ?? '') ? `docker ${verb} ${object ?? ''}` : `docker ${verb ?? ''}`;
}
