/**
 * The default wiring of a job: the executor the entry names (shell, docker or kubernetes), the trace streamer and the artifact stages. Tests
 * and the benchmark replace parts of it.
 */
import type { Logger } from '../log/index.js';
import type { Executor } from '../executors/types.js';
import type { ImageCache } from '../executors/docker/image-cache.js';
import type { MarkerSweeper } from '../executors/shell/marker-sweeper.js';
import { CiRunnerError } from '../util/errors.js';
import type { RunnerConfig } from './config/schema.js';
import type { RunAs } from '../executors/run-as.js';
import { artifactStages } from './job/artifact-stages.js';
import type { JobServices } from './job/services.js';

export type SharedServices = Omit<JobServices, 'runner' | 'client' | 'slots'>;

/** What the executors of one daemon share across its jobs (each job has its own executor). */
export interface DaemonShared {
  /** What `docker image inspect` said, per engine and image (made on the first docker job). */
  dockerImages?: ImageCache;
  /** The paced marker sweeps of shell jobs that had a cgroup (made on the first shell job). */
  markerSweeper?: MarkerSweeper;
}

/** The modules each executor is made of, loaded on its first job (one list for `createExecutor` and `preloadJobModules`). */
const EXECUTOR_MODULES = {
  docker: () =>
    Promise.all([
      import('../executors/docker/index.js'),
      import('../executors/docker/defaults.js'),
      import('../executors/docker/image-cache.js'),
      import('../executors/shell/index.js'),
    ]),
  kubernetes: () => Promise.all([import('../executors/kubernetes/index.js'), import('../executors/shell/index.js'), import('../executors/kubernetes/namespace-record.js')]),
  custom: () => import('../executors/custom/index.js'),
  shell: () => Promise.all([import('../executors/shell/index.js'), import('../executors/shell/marker-sweeper.js')]),
};

/**
 * Creates the executor a runner entry asks for. The executor and trace modules are loaded on the
 * first job, so an idle daemon does not carry them (process and stream libraries cost ~15 MB).
 */
export async function createExecutor(runner: RunnerConfig, logger?: Logger, runAs?: RunAs, shared: DaemonShared = {}): Promise<Executor> {
  if (runner.executor === 'docker') {
    const [{ DockerExecutor }, { dockerOptionsOf }, { ImageCache }, { ShellExecutor }] = await EXECUTOR_MODULES.docker();
    shared.dockerImages ??= new ImageCache();
    const killGraceMs = runner.kill_grace_period * 1000;
    // get_sources runs on the runner (process group + marker sweep, as for kubernetes).
    const host = new ShellExecutor({ shell: runner.shell, killGraceMs, ...(logger ? { logger } : {}) });
    return new DockerExecutor({ images: shared.dockerImages, docker: dockerOptionsOf(runner), runnerToken: runner.token, killGraceMs, host, ...(logger ? { logger } : {}) });
  }
  if (runner.executor === 'kubernetes') {
    const [{ KubernetesExecutor }, { ShellExecutor }, { NamespaceRecord, namespaceRecordFile }] = await EXECUTOR_MODULES.kubernetes();
    const killGraceMs = runner.kill_grace_period * 1000;
    // get_sources runs on the runner, as for docker.
    const host = new ShellExecutor({ shell: runner.shell, killGraceMs, ...(logger ? { logger } : {}) });
    const namespaceRecord = new NamespaceRecord(namespaceRecordFile(runner.builds_dir, runner.token));
    return new KubernetesExecutor({ kubernetes: runner.kubernetes, runnerToken: runner.token, runnerName: runner.name, killGraceMs, host, extractLimitBytes: runner.artifacts_extract_limit, namespaceRecord, ...(logger ? { logger } : {}) });
  }
  if (runner.executor === 'custom') {
    const { CustomExecutor } = await EXECUTOR_MODULES.custom();
    return new CustomExecutor({ custom: runner.custom, buildsDir: runner.builds_dir, cacheDir: runner.cache_dir, shell: runner.shell, ...(logger ? { logger } : {}) });
  }
  if (runner.executor !== 'shell') {
    throw new CiRunnerError('EXECUTOR_UNAVAILABLE', `the ${String(runner.executor)} executor is not available in this version`);
  }
  const [{ ShellExecutor }, { MarkerSweeper }] = await EXECUTOR_MODULES.shell();
  shared.markerSweeper ??= new MarkerSweeper();
  return ShellExecutor.create({
    shell: runner.shell,
    killGraceMs: runner.kill_grace_period * 1000,
    sweeper: shared.markerSweeper,
    ...(logger ? { logger } : {}),
    ...(runAs ? { runAs } : {}),
  });
}

/**
 * Loads what `createExecutor` loads for `executor` and the trace the first job starts, ahead of it
 * (exec, while its runner registers). Failures are left for the job to meet and report.
 */
export async function preloadJobModules(executor: RunnerConfig['executor']): Promise<void> {
  const modules = Object.hasOwn(EXECUTOR_MODULES, executor) ? EXECUTOR_MODULES[executor as keyof typeof EXECUTOR_MODULES]() : undefined;
  await Promise.all([import('../trace/index.js'), modules]).catch(() => undefined);
}

/** The production services; with `runAs`, shell jobs run as that user. */
export function defaultServices(logger: Logger, runAs?: RunAs): SharedServices {
  // One per daemon (these services are made once per process and kept across reloads).
  const shared: DaemonShared = {};
  return {
    ...(runAs ? { runAs } : {}),
    stages: artifactStages,
    startTrace: async (options) => (await import('../trace/index.js')).startTrace(options),
    createExecutor: (runner) => createExecutor(runner, logger, runAs, shared),
    onStopping: () => shared.markerSweeper?.hurry(),
    logger,
  };
}
