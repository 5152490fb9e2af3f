/**
 * What the job runner asks of an executor: run one stage's commands in the job's environment and say
 * how it ended. Stages are separate processes (PROTOCOL.md §9.2); the executor owns killing them.
 */

/** One exported variable, already expanded (values are literal from here on). */
export interface ExportedVariable {
  key: string;
  value: string;
}

export interface StageRequest {
  /** Stage name, for script file names and logs (`get_sources`, `build_script`, `after_script`). */
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
  /** stdout and stderr, interleaved as they come. */
  output: (chunk: Uint8Array) => void;
  /** Aborting kills the stage: SIGTERM to its process group, SIGKILL after the grace period. */
  signal: AbortSignal;
}

export interface StageResult {
  /** Exit code of the stage script, or null when it died from a signal. */
  exitCode: number | null;
  /** Signal that ended it, when one did. */
  signal?: string;
  /** True when `request.signal` aborted the stage. */
  aborted: boolean;
}

export interface Executor {
  readonly name: string;
  /** Tags the job's processes; saved in the job's state dir so a restarted daemon can kill leftovers. */
  readonly marker?: string;
  /** Which containment the job's processes are in, for the job log (e.g. `cgroup v2 <dir>`). */
  readonly containment?: string;
  /** The job's cgroup directory; saved in the job's state dir so a restarted daemon can kill it. */
  readonly cgroup?: string;
  runStage(request: StageRequest): Promise<StageResult>;
  /** Kills anything the job left behind (background processes that escaped their group). */
  cleanup(): Promise<void>;
}
