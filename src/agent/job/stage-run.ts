/**
 * What the stages of one job share (stages.ts, sources-stage.ts): the job's dirs, trace, executor
 * and signals, its variables as each side sees them, and how a stage's commands are run.
 */
import type { ChainedResult, Executor, ExportedVariable } from '../../executors/types.js';
import type { RunAs } from '../../executors/run-as.js';
import type { Logger } from '../../log/index.js';
import type { JobTrace } from '../../trace/index.js';
import type { MarkStep } from '../../util/timeline.js';
import type { JobDirs } from './build-dir.js';
import type { JobControls } from './control-variables.js';
import type { JobServices } from './services.js';

export interface StageRun {
  started: number;
  /** The job's slot (CI_CONCURRENT_PROJECT_ID) and its id among the runner's jobs (CI_CONCURRENT_ID). */
  slot: number;
  concurrentId: number;
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

export interface StageOptions {
  echo: boolean;
  workDir: string;
  variables: ExportedVariable[];
  signal: AbortSignal;
  debug?: boolean;
  untimed?: boolean;
  /** The stage runs before get_sources (a job's pre-get-sources hook): see StageRequest.beforeSources. */
  beforeSources?: boolean;
}

export type ShellRun = (executor: Executor, stage: string, commands: string[], options: StageOptions) => ReturnType<Executor['runStage']>;

/** The build stage, when it may run in get_sources' process (nothing has to happen between them). */
export interface NextStage {
  commands: string[];
  options: StageOptions;
  /** The trace's text between the two stages. */
  between: string;
  /** The build stage began (at that `performance.now()` moment): after_script is owed from here on. */
  began(at: number): void;
}

/** Runs get_sources on the executor chained to `next` (Executor.runChained). */
export type ChainRun = (stage: string, commands: string[], options: StageOptions, next: NextStage) => Promise<ChainedResult>;

/** The user the shell executor runs the job as (global `user`); the docker executor ignores it. */
export function jobUser(services: JobServices, executor: Executor): RunAs | undefined {
  return executor.name === 'shell' ? services.runAs : undefined;
}
