/**
 * The shell executor: each stage is a generated bash/sh script run on this host as a plain (non-login)
 * shell — a login shell per stage costs ~100 ms for nothing — started through execa. The stage is its
 * own process group and, where the host allows it, runs inside the job's own cgroup (containment.ts).
 * An abort stops it in two steps: SIGTERM to the group and the cgroup, SIGKILL after the grace period
 * to whatever is left (the job log says when that was needed). execa's own `cancelSignal` and
 * `forceKillAfterDelay` are not used here: they signal the leader's pid only, and the whole group must
 * get each signal at once, as a terminal's Ctrl-C does. When the stage's shell exits, whatever it left
 * running is stopped the same way, so background processes never outlive a stage (and never hold its
 * output pipe open): with a cgroup that includes `setsid` escapees; without one, `cleanup` sweeps those
 * by their environment marker at the end of the job. get_sources and the build stage may share one
 * process (runChained): each process this daemon starts forks all of it.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { execa } from 'execa';
import type { Logger } from '../../log/index.js';
import type { JobCgroup } from '../cgroup/job-cgroup.js';
import { ExecutorSetupError, type ChainedResult, type ChainedStages, type Executor, type StageRequest, type StageResult } from '../types.js';
import type { RunAs } from '../run-as.js';
import { commandAsUser, giveScript, userEnvironment } from './as-user.js';
import { containJob, enterCgroupLine, movesItself, stageCommand, type JobContainment } from './containment.js';
import type { MarkerSweeper } from './marker-sweeper.js';
import { groupAlive, JOB_MARKER_VARIABLE, signalGroup, sweepMarked } from './process-group.js';
import { timed } from '../../util/timeline.js';
import { writeChainScript, writeStageScript, type ShellName } from '../common/script.js';

/** How long what a normally ended stage left running gets between SIGTERM and SIGKILL, at most. */
const LEFTOVER_GRACE_MS = 1000;
/** How long the output pipes may stay open after the stage and what it left are gone (something unkillable holds them). */
const PIPES_CLOSE_MS = 2000;

export interface ShellExecutorOptions {
  shell: ShellName;
  /** Time between SIGTERM and SIGKILL, ms. */
  killGraceMs: number;
  logger?: Logger;
  /** false: process group + marker sweep even where a cgroup could be made (default: a cgroup where possible). */
  useCgroups?: boolean;
  /** Run the stages as this user (uid, gid, supplementary groups, HOME/USER/LOGNAME); the daemon stays root. */
  runAs?: RunAs;
  /**
   * The daemon's paced sweeps (marker-sweeper.ts): a job whose cgroup was removed is swept in one of
   * them, after `cleanup` (see `settled`). Without it, or without a cgroup, `cleanup` sweeps at once.
   */
  sweeper?: MarkerSweeper;
}

/** Runs a job's stages as local bash/sh processes; one instance per job (make it with `create`). */
export class ShellExecutor implements Executor {
  readonly name = 'shell';
  /** Tags every process of this job (see process-group.ts); also names its cgroup. */
  readonly marker: string;
  readonly containment: string;
  /** The job's cgroup directory, when it has one. */
  readonly cgroup?: string;
  private readonly jobCgroup: JobCgroup | undefined;
  /** The paced sweep `cleanup` left under way. */
  private pacedSweep: Promise<void> | undefined;

  /** An executor whose job has its own cgroup where this host allows it. */
  static async create(options: ShellExecutorOptions): Promise<ShellExecutor> {
    const marker = randomBytes(12).toString('hex');
    return new ShellExecutor(options, await containJob(marker, options), marker);
  }

  /** Without `containment` (use `create`), the job gets the process-group fallback. */
  constructor(
    private readonly options: ShellExecutorOptions,
    containment: JobContainment = { description: 'process group + marker sweep (cgroups not available: not requested)' },
    marker = randomBytes(12).toString('hex'),
  ) {
    this.marker = marker;
    this.containment = containment.description;
    this.jobCgroup = containment.cgroup;
    if (containment.cgroup) this.cgroup = containment.cgroup.dir;
  }

  async runStage(request: StageRequest): Promise<StageResult> {
    const { shell, runAs } = this.options;
    const env = stageEnv(runAs ? userEnvironment(runAs) : undefined, this.marker);
    const { firstLine, wrapIn } = this.entry(env);
    const scriptPath = await timed(request.mark, `${request.stage}: script written`, () => writeStageScript(shell, request, firstLine));
    if (runAs) await giveScript(runAs, scriptPath);
    try {
      return await this.spawn(scriptPath, request, env, wrapIn);
    } finally {
      await rm(scriptPath, { force: true });
    }
  }

  /**
   * get_sources and build_script of a job with nothing to do between them, as one process
   * (generateChainScript); not for a job user (each stage's start is its own `setpriv` there).
   */
  async runChained(chain: ChainedStages): Promise<ChainedResult> {
    const { shell, runAs } = this.options;
    if (runAs) throw new Error('shell executor: stages are not chained for a job user');
    const env = stageEnv(undefined, this.marker);
    const { firstLine, wrapIn } = this.entry(env);
    const { first, second } = chain;
    const secondPath = await timed(first.mark, `${second.stage}: script written`, () => writeStageScript(shell, second));
    try {
      const chainPath = await timed(first.mark, `${first.stage}: script written`, () => writeChainScript(shell, chain, secondPath, firstLine));
      let began = false;
      const onBegan = (): void => {
        if (began) return;
        began = true;
        chain.began(performance.now());
      };
      try {
        const result = await this.spawn(chainPath, first, env, wrapIn, onBegan);
        return began ? { first: { exitCode: 0, aborted: false }, second: result } : { first: result };
      } finally {
        await rm(chainPath, { force: true });
      }
    } finally {
      await rm(secondPath, { force: true });
    }
  }

  /**
   * How a stage in `env` enters the job cgroup: its script moves itself as its first line when
   * nothing can run before that line; else the `sh` in front of it does (`wrapIn`, stageCommand).
   */
  private entry(env: NodeJS.ProcessEnv): { firstLine?: string; wrapIn?: JobCgroup } {
    const cgroup = this.jobCgroup;
    if (!cgroup) return {};
    return movesItself(this.options.shell, env, this.options.runAs !== undefined) ? { firstLine: enterCgroupLine(this.options.shell, cgroup.procsFile) } : { wrapIn: cgroup };
  }

  /**
   * Runs the stage's script; `wrapIn`: the cgroup the `sh` wrapper moves it into (the script does not
   * itself); `onBegan`: a chain's script says on fd 3 when its second stage starts.
   */
  private async spawn(scriptPath: string, request: StageRequest, env: NodeJS.ProcessEnv, wrapIn: JobCgroup | undefined, onBegan?: () => void): Promise<StageResult> {
    if (request.signal.aborted) return { exitCode: null, aborted: true };
    // As the job user through setpriv when `user` is set; the move into the cgroup comes first, as root.
    const asUser = this.options.runAs ? commandAsUser(this.options.runAs, this.options.shell, scriptPath) : undefined;
    const [file, args] = stageCommand(asUser ? [asUser.file, ...asUser.args] : [this.options.shell, scriptPath], wrapIn);
    const child = execa(file, args, {
      cwd: request.scriptDir,
      // The leader of its own process group (process-group.ts). execa's `cleanup` never applies to a
      // detached process: the job's stop, its cgroup and the marker sweep take care of it.
      detached: true,
      cleanup: false,
      // A chain's fd 3 carries one line: its second stage began.
      stdio: onBegan ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      // Chunks go to the trace as they come, bytes as the shell wrote them; nothing is kept here.
      buffer: false,
      encoding: 'buffer',
      stripFinalNewline: false,
      // An exit status is an answer, not an error.
      reject: false,
      // stageEnv is the whole environment (the daemon's, minus its secrets): nothing is merged into it.
      extendEnv: false,
      env,
    });
    child.stdout.on('data', (chunk: Uint8Array) => request.output(chunk));
    child.stderr.on('data', (chunk: Uint8Array) => request.output(chunk));
    if (onBegan) (child.stdio as readonly (NodeJS.ReadableStream | null)[])[3]?.on('data', onBegan);
    const pgid = child.pid;

    let stopping: Promise<boolean> | undefined;
    const onAbort = (): void => {
      if (pgid !== undefined) stopping = this.stopGroup(pgid, this.options.killGraceMs);
    };
    request.signal.addEventListener('abort', onAbort, { once: true });
    // The leader's exit, not the end of `child` (which also waits for the pipes to close): a leftover
    // background process may hold the pipes. `child` ends alone when the shell could not be started.
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), child]);
    request.signal.removeEventListener('abort', onAbort);
    const aborted = stopping !== undefined;
    // After an abort the stop goes on until the group is gone; else what the stage left gets a short one.
    const forced = (await stopping) ?? false;
    if (!aborted && pgid !== undefined) await this.stopLeftovers(pgid);
    // Without a cgroup, escapees (setsid) are looked for after an abort here, and always at the end of
    // the job (`cleanup`); a /proc scan per normal stage would cost more than the stage itself.
    if (aborted) await this.sweep();
    const result = await pipesClosed(child);
    if (result.exitCode === undefined && result.signal === undefined) {
      throw new ExecutorSetupError('SHELL_STAGE_NOT_STARTED', `could not start the ${request.stage} stage: ${result.originalMessage ?? result.shortMessage}`);
    }
    if (forced) this.options.logger?.info({ stage: request.stage, graceMs: this.options.killGraceMs }, 'the stage outlived SIGTERM by the grace period; killed it');
    return {
      exitCode: result.exitCode ?? null,
      ...(result.signal ? { signal: result.signal } : {}),
      aborted,
      ...(forced ? { killedAfterMs: this.options.killGraceMs } : {}),
    };
  }

  /** What a normally ended stage left running (in its group or the job cgroup) is stopped, with a short grace. */
  private async stopLeftovers(pgid: number): Promise<void> {
    const cgroupLeft = this.jobCgroup ? await this.jobCgroup.populated().catch(() => false) : false;
    if (!cgroupLeft && !(await groupAlive(pgid))) return;
    await this.stopGroup(pgid, Math.min(this.options.killGraceMs, LEFTOVER_GRACE_MS));
    if (cgroupLeft) this.options.logger?.debug({ cgroup: this.jobCgroup?.dir }, 'killed processes a stage left in the job cgroup');
  }

  /**
   * The two-step stop: SIGTERM to the group and the cgroup, up to `graceMs` for them to empty, then
   * SIGKILL to whatever is left. Resolves true when something was still there for SIGKILL.
   */
  private async stopGroup(pgid: number, graceMs: number): Promise<boolean> {
    const cgroup = this.jobCgroup;
    signalGroup(pgid, 'SIGTERM');
    if (cgroup) await cgroup.signal('SIGTERM').catch(() => 0);
    const deadline = Date.now() + graceMs;
    const groupGone = await waitGroupGone(pgid, graceMs);
    const cgroupGone = cgroup ? await cgroup.waitEmpty(Math.max(0, deadline - Date.now())).catch(() => false) : true;
    await this.forceKill(pgid);
    return !groupGone || !cgroupGone;
  }

  private async forceKill(pgid: number): Promise<void> {
    signalGroup(pgid, 'SIGKILL');
    if (this.jobCgroup && !(await this.jobCgroup.kill().catch(() => false))) {
      this.options.logger?.warn({ cgroup: this.jobCgroup.dir }, 'processes in the job cgroup did not die of SIGKILL');
    }
  }

  private async sweep(): Promise<void> {
    const killed = await sweepMarked(this.marker);
    if (killed > 0) this.options.logger?.debug({ killed }, 'killed processes that left the stage process group');
  }

  /**
   * Kills and removes the job's cgroup, then sweeps marked processes: at once without a cgroup (or
   * when it could not be removed), else in the sweeper's next pass, which `settled` waits for.
   */
  async cleanup(): Promise<void> {
    const removed = this.jobCgroup ? await this.jobCgroup.destroy().catch(() => false) : false;
    if (this.jobCgroup && !removed) {
      this.options.logger?.warn({ cgroup: this.jobCgroup.dir }, 'could not remove the job cgroup; the next start of the runner removes it');
    }
    const sweeper = this.options.sweeper;
    if (!removed || !sweeper) {
      await this.sweep();
      return;
    }
    this.pacedSweep = sweeper.sweep(this.marker).then(
      (killed) => {
        if (killed > 0) this.options.logger?.warn({ killed, marker: this.marker }, 'killed processes the job had moved out of its cgroup');
      },
      (error: unknown) => this.options.logger?.warn({ err: error }, 'the marker sweep after the job failed'),
    );
  }

  /** Resolves when nothing of the job can be left running: after `cleanup` and the paced sweep it left under way. */
  async settled(): Promise<void> {
    await this.pacedSweep;
  }
}

/** The daemon's environment, minus the runner's own secrets (run-once reads its token from it). */
function stageEnv(user: Record<string, string> | undefined, marker: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...user, [JOB_MARKER_VARIABLE]: marker };
  // The daemon's environment, minus the runner's own secrets (run-once reads its token and its client
  // certificate's files from it; git gets those through its own settings).
  delete env.CI_SERVER_TOKEN;
  delete env.REGISTRATION_TOKEN;
  delete env.CI_SERVER_TLS_CERT_FILE;
  delete env.CI_SERVER_TLS_KEY_FILE;
  return env;
}

/** True once no live process of the group is left, false when `ms` ran out first. */
async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await groupAlive(pgid))) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * The end of `child`: its pipes close once every writer is gone. Bounded in case something unkillable
 * holds them; then our ends are closed, which execa takes as the end.
 */
async function pipesClosed<T>(child: Promise<T> & { stdout: { destroy(): void }; stderr: { destroy(): void } }): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, PIPES_CLOSE_MS)));
  const first = await Promise.race([child.then(() => 'closed' as const), late.then(() => 'late' as const)]);
  clearTimeout(timer);
  if (first === 'late') {
    child.stdout.destroy();
    child.stderr.destroy();
  }
  return child;
}
