/**
 * The docker executor: build_script and after_script run in containers of the job's image, each stage
 * its own `docker run`, with the slot's project dir bind-mounted at `/builds/<namespace>/<project>`.
 * get_sources runs on the host through the executor given as `host` (the runner's shell executor);
 * artifacts and cache are the runner's.
 * An image with a non-root USER runs the script as that user (image-user.ts).
 * Services run on a network made for the job. Everything carries the job's labels and is removed in
 * `cleanup`, whatever the outcome.
 */
import { randomBytes } from 'node:crypto';
import { lstat, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Logger } from '../../log/index.js';
import { timed, type MarkStep } from '../../util/timeline.js';
import { pathUnderBuildsDir } from '../common/build-path.js';
import { fileVariablePaths } from '../common/file-variables.js';
import { writeStageScript } from '../common/script.js';
import type { Executor, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { DockerCli } from './cli.js';
import { containerFlags } from './create-args.js';
import { createStartedMarker, entrypointFor, notStartedMessage, shellStarted, type Entrypoint } from './entrypoint.js';
import { ImageCache } from './image-cache.js';
import { ensureImage, type LocalImage } from './image.js';
import { chownInImage, imageUser, type Ids } from './image-user.js';
import { containerLabelArgs, jobLabelArgs } from './labels.js';
import { planJob } from './job-plan.js';
import type { DockerOptions } from './options.js';
import { jobDockerConfig } from './registry-auth.js';
import { dockerAuthConfig } from '../common/docker-auth-config.js';
import { runStageContainer } from './stage-container.js';
import { startServices } from './start-services.js';
import { jobVolumes } from './volumes.js';

/** Where the slot dir appears in the container (GitLab Runner's path). */
export const CONTAINER_BUILDS_DIR = '/builds';

export interface DockerExecutorOptions {
  docker: DockerOptions;
  runnerToken: string;
  /** Time between SIGTERM and SIGKILL, ms. */
  killGraceMs: number;
  /** Runs the host stages (get_sources): the runner's shell executor (agent/services.ts makes it). */
  host: Executor;
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
  /** `container_labels`, expanded: containers only, not the network. */
  containerLabels: string[];
  image: string;
  /** `privileged`, if `allowed_privileged_images` lets this image have it. */
  privileged: boolean;
  /** `--volume` values (volumes.ts) and the volumes of this job alone. */
  binds: string[];
  temporaryVolumes: string[];
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
  readonly host: Executor;
  readonly marker: string | undefined;
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
    this.host = options.host;
    this.marker = this.host.marker;
    this.docker = new DockerCli({
      cli: options.docker.cli,
      ...(options.docker.host ? { host: options.docker.host } : {}),
      ...(options.docker.tls_verify ? { tlsVerify: true } : {}),
      ...(options.docker.tls_cert_path ? { certPath: options.docker.tls_cert_path } : {}),
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
    const plan = planJob(o, build, request.variables, request.log);
    const { image } = plan;
    const labels = jobLabelArgs(this.options.runnerToken, build.id, request.slot);
    const containerLabels = containerLabelArgs(o.container_labels, request.variables, false);
    this.job = {
      id: build.id, prefix, labels, containerLabels, image, privileged: plan.privileged, binds: [], temporaryVolumes: [],
      slotDir: request.slotDir, projectDir: request.projectDir, stateDir: request.stateDir, entrypoint: entrypointFor([], undefined),
      ...(plan.user ? { runUser: plan.user } : {}),
      ...(plan.platform ? { platform: plan.platform } : {}),
    };
    const job = this.job;
    // The job's registry logins (DOCKER_AUTH_CONFIG, v4 `credentials`) reach its pulls only, through a config file.
    const authConfig = dockerAuthConfig(request.variables.findLast((v) => v.key === 'DOCKER_AUTH_CONFIG')?.value);
    for (const line of authConfig.warnings) request.warn(`WARNING: ${line}`);
    const env = await jobDockerConfig(request.stateDir, build.credentials, process.env, authConfig.auths);
    if (Object.keys(authConfig.auths).length > 0) request.log(`Authenticating with credentials from $DOCKER_AUTH_CONFIG for ${Object.keys(authConfig.auths).join(', ')}`);
    if (env.DOCKER_CONFIG && build.credentials.length > 0) request.log(`Authenticating with credentials for ${[...new Set(build.credentials.map((c) => c.url))].join(', ')}`);
    request.log(`Using effective pull policy of [${plan.imagePolicies.join(' ')}] for container ${image}`);
    request.log(`Using docker image ${image} ...`);
    const local = await ensureImage(this.docker, image, plan.imagePolicies, { log: request.log, signal: request.signal, env, cache: this.images, ...(plan.platform ? { platform: plan.platform } : {}) });
    request.log(`Using docker image ${image} with ID ${local.id}`);
    await this.readImageConfig(job, local, request);
    const volumes = await jobVolumes(this.docker, o, { runnerToken: this.options.runnerToken, projectId: build.project_id, slot: request.slot, prefix, signal: request.signal });
    job.binds = volumes.binds;
    job.temporaryVolumes = volumes.temporary;
    if (plan.services.length === 0) return;
    await startServices(
      {
        docker: this.docker, options: o, services: plan.services, prefix, labels, binds: job.binds, secrets: [build.token, this.options.runnerToken],
        ensure: { env, cache: this.images }, track: (kind, name) => (kind === 'network' ? (job.network = name) : this.containers.add(name)),
      },
      request,
    );
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

  /**
   * Runs a stage in a container of its own; with EXECUTOR_JOB_SECTION_ATTEMPTS above 1, again (as
   * GitLab Runner does) when the container was removed under it. Only then is the container kept
   * when it ends, to tell a removal from a script killed by SIGKILL; the job's cleanup removes it.
   */
  async runStage(request: StageRequest): Promise<StageResult> {
    const attempts = Math.max(1, Math.min(10, request.attempts ?? 1));
    const base = `${this.job?.prefix ?? ''}-${request.stage.replace(/_/g, '-')}`;
    for (let attempt = 1; ; attempt += 1) {
      if (attempt > 1) request.output(Buffer.from(`\x1b[32;1mRetrying ${request.stage}\x1b[0;m\n`));
      const name = attempt === 1 ? base : `${base}-${attempt}`;
      const result = await this.runStageOnce(request, name, attempts > 1);
      if (attempts === 1 || result.aborted || !(await this.removedUnder(name, result.exitCode))) return result;
      request.output(Buffer.from(`\x1b[31;1mERROR: Container "${name}" not found or removed. Will retry...\x1b[0;m\n`));
      if (attempt >= attempts) {
        request.output(Buffer.from('\x1b[31;1mERROR: Execution attempts exceeded\x1b[0;m\n'));
        return result;
      }
    }
  }

  /**
   * A kept stage container that is gone, or going: someone removed it while the stage ran. `docker rm
   * -f` kills it (137) before it removes it, so a container killed so is looked at a few times.
   */
  private async removedUnder(name: string, exitCode: number | null): Promise<boolean> {
    for (let look = 0; look < 10; look += 1) {
      const state = await this.docker.run(['container', 'inspect', '--format', '{{.State.Status}}', name]).catch((error: unknown) => (/no such (container|object)/i.test((error as Error).message) ? 'gone' : 'unknown'));
      if (state === 'gone' || state === 'removing') {
        this.containers.delete(name);
        return true;
      }
      if (exitCode !== 137) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  }

  private async runStageOnce(request: StageRequest, name: string, keep: boolean): Promise<StageResult> {
    const job = this.job;
    if (!job) throw new Error('docker executor: runStage before prepare');
    const scriptPath = await timed(request.mark, `${request.stage}: script written`, () => writeStageScript('sh', request));
    let marker: string | undefined;
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
          ...(keep ? { keep: true } : {}),
        },
        request,
      );
      // Killed, stopped or never started (125: docker's own error): the wrapper may not have handed
      // the files back, and the container may still exist.
      if (result.aborted || result.exitCode === null || result.exitCode === 125 || result.signal !== undefined) this.needsOwnerFix ||= this.owner !== undefined;
      // 125: the container did not start, perhaps because the image is gone: the next job inspects again.
      if (result.exitCode === 125) this.images.forget(this.docker.engine, job.image);
      else if (!keep) this.containers.delete(name);
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
      ...job.containerLabels,
      ...(job.network && !this.options.docker.network_mode ? ['--network', job.network] : []),
      ...containerFlags(this.options.docker, { privileged: job.privileged, volumes: job.binds }),
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
      const keep = this.options.docker.volume_keep;
      if (this.containers.size > 0) await this.docker.run(['rm', '--force', ...(keep ? [] : ['--volumes']), ...this.containers]).catch((error: unknown) => this.warn(error, 'removing the job\'s containers failed'));
      this.containers.clear();
      if (job?.network) await this.docker.run(['network', 'rm', job.network]).catch((error: unknown) => this.warn(error, 'removing the job\'s network failed'));
      if (job && job.temporaryVolumes.length > 0 && !keep) await this.docker.run(['volume', 'rm', '--force', ...job.temporaryVolumes]).catch((error: unknown) => this.warn(error, 'removing the job\'s volumes failed'));
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
