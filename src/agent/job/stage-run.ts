/**
 * What the stages of one job share (stages.ts, sources-stage.ts): the job's dirs, trace, executor
 * and signals, its variables as each side sees them, and how a stage's commands are run.
 */
import type { Executor, ExportedVariable } from '../../executors/types.js';
import type { RunAs } from '../../executors/run-as.js';
import type { Logger } from '../../log/index.js';
import type { JobTrace } from '../../trace/index.js';
import type { MarkStep } from '../../util/timeline.js';
import type { JobDirs } from './build-dir.js';
import type { JobControls } from './control-variables.js';
import type { JobServices } from './services.js';

export interface StageRun {
  started: number;
  slot: number;
  dirs: JobDirs;
  trace: JobTrace;
  write: (chunk: string | Uint8Array) => void;
  executor: Executor;
  stop: AbortSignal;
  logger: Logger;
  /** The job's timeline (`--debug`); undefined when nobody listens. */
  mark?: MarkStep;
}

/** The job's variables as host stages and as build stages see them (they differ for docker). */
export interface JobEnv {
  controls: JobControls;
  host: ExportedVariable[];
  build: ExportedVariable[];
}

export type ShellRun = (
  executor: Executor,
  stage: string,
  commands: string[],
  options: { echo: boolean; workDir: string; variables: ExportedVariable[]; signal: AbortSignal; debug?: boolean; untimed?: boolean },
) => ReturnType<Executor['runStage']>;

/** The user the shell executor runs the job as (global `user`); the docker executor ignores it. */
export function jobUser(services: JobServices, executor: Executor): RunAs | undefined {
  return executor.name === 'shell' ? services.runAs : undefined;
}
