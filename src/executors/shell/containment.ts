/**
 * How the shell executor holds one job's processes: the job's cgroup when the host allows one
 * (nothing can leave it), else each stage's process group plus the /proc marker sweep. The marker
 * sweep runs in both cases, as a second net (a root job can move itself out of its cgroup); with a
 * cgroup, in the daemon's paced passes (marker-sweeper.ts).
 */
import type { Logger } from '../../log/index.js';
import { shellQuote } from '../common/quote.js';
import { describeContainment, processContainment } from '../cgroup/containment.js';
import { JobCgroup } from '../cgroup/job-cgroup.js';

/** What a stage prints when it could not enter its cgroup (and so does not run). */
function moveFailed(procsFile: string): string {
  return `ERROR: the runner could not move this stage into its cgroup (${procsFile})`;
}

/**
 * `sh -c` program a stage starts with when it has a cgroup: the shell writes its own pid to
 * `cgroup.procs` ($1) and only then execs the stage's shell ($2…), keeping its pid (the process-group
 * leader). The move is done by the process itself before any user code exists, so nothing can fork
 * outside the cgroup, whatever the timing; a failed move stops the stage instead of running it
 * uncontained.
 */
export const ENTER_CGROUP_PROGRAM = `{ echo $$ > "$1"; } 2>/dev/null || { echo "${moveFailed('$1')}" >&2; exit 1; }; shift; exec "$@"`;

/**
 * The same move as the first line of the stage's own script, which saves the `sh` in front of it
 * (an exec, ~3 ms a stage here). Only where nothing can run before that line: the stage's shell is
 * the one we spawn (no `setpriv` to a job user, who could not write `cgroup.procs`), and bash has no
 * BASH_ENV file to read first (a non-interactive sh reads none). Builtins by name, so a function in
 * the environment cannot stand in for them; `>|`, so a noclobber from SHELLOPTS cannot refuse the write.
 */
export function enterCgroupLine(shell: 'bash' | 'sh', procsFile: string): string {
  const builtin = shell === 'bash' ? 'builtin ' : '';
  const message = shellQuote(moveFailed(procsFile));
  return `{ ${builtin}echo $$ >| ${shellQuote(procsFile)}; } 2>/dev/null || { ${builtin}echo ${message} >&2; ${builtin}exit 1; }`;
}

/** True when the stage's script can move itself into the cgroup (enterCgroupLine); else the `sh` wrapper does. */
export function movesItself(shell: 'bash' | 'sh', env: NodeJS.ProcessEnv, asUser: boolean): boolean {
  return !asUser && !(shell === 'bash' && env.BASH_ENV);
}

export interface JobContainment {
  /** The job's cgroup, when there is one. */
  cgroup?: JobCgroup;
  /** For the job log: `cgroup v2 <dir>` or `process group + marker sweep (cgroups not available: <why>)`. */
  description: string;
}

/**
 * Gives a job its containment: a new cgroup named after the job's marker when this process can make
 * one, else the fallback with the reason. `useCgroups: false` asks for the fallback.
 */
export async function containJob(marker: string, options: { useCgroups?: boolean; logger?: Logger }): Promise<JobContainment> {
  if (options.useCgroups === false) return { description: describeContainment({ kind: 'process-group', reason: 'turned off for this executor' }) };
  const containment = await processContainment(options.logger);
  if (containment.kind !== 'cgroup') return { description: describeContainment(containment) };
  try {
    const cgroup = await JobCgroup.create(containment, marker);
    options.logger?.debug({ cgroup: cgroup.dir }, 'job cgroup created');
    return { cgroup, description: describeContainment(containment, cgroup.dir) };
  } catch (error) {
    const reason = `cannot create a job cgroup under ${containment.daemonDir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
    options.logger?.warn({ reason }, 'this job runs without a cgroup');
    return { description: describeContainment({ kind: 'process-group', reason }) };
  }
}

/** The command line that runs `command` (the shell and its script), entering `cgroup` first when there is one. */
export function stageCommand(command: [string, ...string[]], cgroup: JobCgroup | undefined): [string, string[]] {
  const [file, ...args] = command;
  if (!cgroup) return [file, args];
  return ['/bin/sh', ['-c', ENTER_CGROUP_PROGRAM, 'ci-runner-stage', cgroup.procsFile, ...command]];
}
