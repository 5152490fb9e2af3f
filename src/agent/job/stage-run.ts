/**
 * What the stages of one job share (stages.ts, sources-stage.ts): the job's dirs, trace, executor
 * and signals, its variables as each side sees them, and how a stage's commands are run.
 */
import type { StageName } from '../../executors/common/stages.js';
import type { ChainedResult, Executor, ExportedVariable } from '../../executors/types.js';
import type { RunAs } from '../../executors/run-as.js';
import type { Logger } from '../../log/index.js';
import type { JobTrace } from '../../trace/index.js';
import type { MarkStep } from '../../util/timeline.js';
import type { JobDirs } from './build-dir.js';
import type { JobControls } from './control-variables.js';
import type { ResolvedFlags } from '../config/feature-flags.js';
import type { JobServices } from './services.js';

export interface StageRun {
  started: number;
  /** The job's slot (CI_CONCURRENT_PROJECT_ID) and its id among the runner's jobs (CI_CONCURRENT_ID). */
  slot: number;
  concurrentId: number;
  dirs: JobDirs;
  trace: JobTrace;
  /** The runner's lines into the job log. */
  write: (chunk: string | Uint8Array) => void;
  /** A stage's output: a stream of the job log of its own (trace/capture.ts), ended with the stage. */
  output: () => StageOutput;
  executor: Executor;
  /** The job's feature flags (feature-flags.ts). */
  flags: ResolvedFlags;
  stop: AbortSignal;
  logger: Logger;
  /** The job's timeline (`--debug`); undefined when nobody listens. */
  mark?: MarkStep;
}

export interface StageOutput {
  write: (chunk: Uint8Array) => void;
  /** Ends it; returns the log sections its output left open (trace/section-watch.ts). */
  end: () => string[];
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
  /** FF_SCRIPT_SECTIONS: a multi-line command is a collapsed section (when the server folds sections). */
  scriptSections?: boolean;
  /** A green line the stage starts with, in its section (after_script's `Running after script...`). */
  notice?: string;
  /** EXECUTOR_JOB_SECTION_ATTEMPTS (StageRequest.attempts). */
  attempts?: number;
  /** The caller opened the section this runs in (see ShellRun). */
  inSection?: boolean;
  /** The stage runs before get_sources (a job's pre-get-sources hook): see StageRequest.beforeSources. */
  beforeSources?: boolean;
}

/**
 * Runs one stage on `executor`, inside its log section; or a part of a stage whose section the caller
 * opened (`inSection`: a job's hook around get_sources), named for its script alone.
 */
export interface ShellRun {
  (executor: Executor, stage: StageName, commands: string[], options: StageOptions): ReturnType<Executor['runStage']>;
  (executor: Executor, part: string, commands: string[], options: StageOptions & { inSection: true }): ReturnType<Executor['runStage']>;
}

/** The first step's stage, when it may run in get_sources' process (nothing has to happen between them). */
export interface NextStage {
  stage: StageName;
  commands: string[];
  options: StageOptions;
  /** The build stage began (at that `performance.now()` moment): after_script is owed from here on. */
  began(at: number): void;
}

/** Runs get_sources on the executor chained to `next` (Executor.runChained). */
export type ChainRun = (stage: StageName, commands: string[], options: StageOptions, next: NextStage) => Promise<ChainedResult>;

/** The user the shell executor runs the job as (global `user`); the docker executor ignores it. */
export function jobUser(services: JobServices, executor: Executor): RunAs | undefined {
  return executor.name === 'shell' ? services.runAs : undefined;
}
