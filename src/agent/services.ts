/**
 * The default wiring of a job: the shell executor, the trace streamer and the artifact stages. Tests
 * and the benchmark replace parts of it.
 */
import type { Logger } from '../log.js';
import { ShellExecutor } from '../executors/shell/index.js';
import type { Executor } from '../executors/types.js';
import { startTrace } from '../trace/index.js';
import { CiRunnerError } from '../errors.js';
import type { RunnerConfig } from './config/schema.js';
import { artifactStages } from './job/artifact-stages.js';
import type { JobServices } from './job/run-job.js';

export type SharedServices = Omit<JobServices, 'runner' | 'client' | 'slots'>;

/** Creates the executor a runner entry asks for. */
export function createExecutor(runner: RunnerConfig, logger?: Logger): Executor {
  if (runner.executor !== 'shell') {
    throw new CiRunnerError('EXECUTOR_UNAVAILABLE', `the ${runner.executor} executor is not available in this version; use executor = "shell"`);
  }
  return new ShellExecutor({ shell: runner.shell, killGraceMs: runner.kill_grace_period * 1000, ...(logger ? { logger } : {}) });
}

/** The production services. */
export function defaultServices(logger: Logger): SharedServices {
  return {
    stages: artifactStages,
    startTrace,
    createExecutor: (runner) => createExecutor(runner, logger),
    logger,
  };
}
