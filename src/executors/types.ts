/**
 * What the job runner asks of an executor: run one stage's commands in the job's environment and say
 * how it ended. Stages are separate processes, except get_sources and the build chained in one (runChained,
 * docs/protocol-v1.md §9.2); the executor owns killing them.
 */

import { CiRunnerError } from '../util/errors.js';
import type { BuildPayload } from '../protocol/types.js';
import type { FailureReason } from '../protocol/v4/failure-reason.js';
import type { MarkStep } from '../util/timeline.js';

/** One exported variable, already expanded (values are literal from here on). */
export interface ExportedVariable {
  key: string;
  value: string;
  /**
   * A file variable: the host path of the file holding its content (written by the job runner in the
   * job's state dir); `value` is that file's path as the stages see it. The one source of the host
   * files an executor hands to a job: never derived from a value or a name, which the job and the
   * coordinator control.
   */
  file?: string;
  /**
   * GitLab's `public` flag, or a variable the runner sets itself (GitLab Runner's Public/Internal):
   * only these reach a service container. Absent: a secret (a project's or a pipeline's variable).
   */
  public?: boolean;
}

export interface StageRequest {
  /** GitLab Runner's stage name (executors/common/stages.ts), for script file names and logs. */
  stage: string;
  /** Command lines, run in order; the first failing one ends the stage (`set -e`). */
  commands: string[];
  /** Echo each command in green as `$ cmd` before running it (user scripts), or run silently. */
  echoCommands: boolean;
  variables: ExportedVariable[];
  /** Directory the script `cd`s into (created by the caller). */
  workDir: string;
  /** A private directory for the generated script (the job's state dir). */
  scriptDir: string;
  /** `set -x` for the user's commands (CI_DEBUG_TRACE). */
  debugTrace?: boolean;
  /**
   * FF_SCRIPT_SECTIONS: an echoed command of several lines is shown as a collapsed log section of its
   * own (`section_<this>_<i>`, e.g. `section_script_step_0`), as GitLab Runner's scripts print it;
   * without it, as its first line and `# collapsed multi-line command`.
   */
  scriptSections?: string;
  /**
   * The stage runs before get_sources has fetched the checkout (a job's pre-get-sources hook): an
   * executor that copies the checkout into the job's environment with its first stage waits for the next.
   */
  beforeSources?: boolean;
  /** stdout and stderr, interleaved as they come. */
  output: (chunk: Uint8Array) => void;
  /** Aborting kills the stage: SIGTERM to its process group, SIGKILL after the grace period. */
  signal: AbortSignal;
  /** The job's timeline (`--debug`): the script write and each docker call are steps of it. */
  mark?: MarkStep;
  /**
   * EXECUTOR_JOB_SECTION_ATTEMPTS (1–10, default 1): how many times the stage runs when its container
   * was removed under it (the docker executor, as GitLab Runner's); others run a stage once.
   */
  attempts?: number;
}

export interface StageResult {
  /** Exit code of the stage script, or null when it died from a signal. */
  exitCode: number | null;
  /** Signal that ended it, when one did. */
  signal?: string;
  /** True when `request.signal` aborted the stage. */
  aborted: boolean;
  /** After an abort: set when the stage outlived SIGTERM by this grace period (ms) and was killed with SIGKILL. */
  killedAfterMs?: number;
}

/** Two stages in one process: one output, one signal (the first's) and one timeline for both. */
export interface ChainedStages {
  first: StageRequest;
  second: Omit<StageRequest, 'output' | 'signal' | 'mark'>;
  /**
   * Written to the output between the two, when the second starts: the text for a time `time` (a
   * placeholder the executor's script puts its clock's Unix seconds in: log sections' markers).
   */
  between: (time: string) => string;
  /** Called when the second stage starts (its `performance.now()` moment, near enough). */
  began(at: number): void;
}

/** How a chain ended: `second` is there when the second stage started. */
export interface ChainedResult {
  first: StageResult;
  second?: StageResult;
}

/** What an executor learns about the job before its first stage (docker: image, services, network). */
export interface PrepareRequest {
  build: BuildPayload;
  slot: number;
  /** The job's variables as the host stages see them (image names and service environments expand from them). */
  variables: ExportedVariable[];
  /** `<builds_dir>/<token8>/<slot>`, the project dir and the job's private state dir, on the host. */
  slotDir: string;
  projectDir: string;
  stateDir: string;
  /** Lines for the trace. */
  log: (line: string) => void;
  warn: (line: string) => void;
  signal: AbortSignal;
  /** The job's timeline (`--debug`): each docker call is a step of it. */
  mark?: MarkStep;
  /**
   * The job's variables as the build stages will see them (paths through `buildPath`), for an
   * executor whose preparation hands them on (custom: prepare_exec's CUSTOM_ENV_*); asked once the
   * executor knows its paths.
   */
  buildVariables?: () => Promise<ExportedVariable[]>;
}

/** A job cannot run on this executor as configured (no image, image refused or not pullable). The
 *  message is the trace's `ERROR: Job failed: <message>`; `reason`, when given, what v4's final
 *  update names (else one follows from the code, agent/job/failure.ts). */
export class ExecutorSetupError extends CiRunnerError {
  readonly reason: FailureReason | undefined;

  constructor(code: string, message: string, options?: { cause?: unknown; reason?: FailureReason }) {
    super(code, message, options);
    this.reason = options?.reason;
  }
}

/** What the job left went past a limit of the runner's (the kubernetes copy-back's byte budget): the job's failure, not the runner's. */
export class JobOverLimitError extends CiRunnerError {}

export interface Executor {
  readonly name: string;
  /** Tags the job's processes; saved in the job's state dir so a restarted daemon can kill leftovers. */
  readonly marker?: string;
  /** Which containment the job's processes are in, for the job log (e.g. `cgroup v2 <dir>`). */
  readonly containment?: string;
  /** The job's cgroup directory; saved in the job's state dir so a restarted daemon can kill it. */
  readonly cgroup?: string;
  /**
   * Runs the stages that belong to the host (get_sources) when the build stages run elsewhere; absent
   * when this executor runs them itself.
   */
  readonly host?: Executor;
  /** Called once before get_sources; may fail the job with an {@link ExecutorSetupError}. */
  prepare?(request: PrepareRequest): Promise<void>;
  /**
   * Waits for what `prepare` left starting (kubernetes: the pod), so the host stages run meanwhile;
   * called once after them, before the first build stage. May fail the job with an
   * {@link ExecutorSetupError}.
   */
  ready?(signal: AbortSignal): Promise<void>;
  /**
   * The path the build stages see for a host path under the slot dir (docker: `/builds/…`); identity
   * when absent. Used for CI_PROJECT_DIR, CI_BUILDS_DIR, file variables and work dirs.
   */
  buildPath?(hostPath: string): string;
  /** Where the build stages see the slot dir (docker, kubernetes: `/builds`); absent: they see the host's paths. */
  readonly buildsDir?: string;
  runStage(request: StageRequest): Promise<StageResult>;
  /**
   * Runs `chain.first`, then `chain.second` only when the first exited 0, as one process started
   * from the daemon instead of two (the shell executor: each start forks this process, the dearest
   * step of a short job). Absent where the stages cannot share a process.
   */
  runChained?(chain: ChainedStages): Promise<ChainedResult>;
  /**
   * Brings what the build stages wrote back to the host's project dir, before the host reads it
   * (archive_cache, upload_artifacts); absent when the build stages write there directly. Called
   * only when a host stage will read it. `warn` writes a line to the trace.
   */
  collect?(signal: AbortSignal, warn: (line: string) => void): Promise<void>;
  /**
   * Every stage runs through `runStage`, the runner's own among them (get_sources, restore_cache,
   * download_artifacts, archive_cache, upload_artifacts, cleanup_file_variables), as scripts that
   * call GitLab Runner's helper commands where the job runs (the custom executor).
   */
  readonly runsEveryStage?: boolean;
  /**
   * Called once when the stages are over, before the final update (custom: cleanup_exec, which
   * GitLab Runner runs before the job's end is reported). Never rejects.
   */
  finish?(): Promise<void>;
  /** Kills anything the job left behind (background processes that escaped their group). */
  cleanup(): Promise<void>;
  /**
   * After `cleanup`: resolves when what it left under way is done too (the shell's paced marker
   * sweep). The job's state dir, which names the job's processes for a restarted runner, waits for it;
   * the job's slot does not.
   */
  settled?(): Promise<void>;
}
