/**
 * The shell executor: each stage is a generated bash/sh script run on this host as a plain (non-login)
 * shell — a login shell per stage costs ~100 ms for nothing. The stage is its own process group and,
 * where the host allows it, runs inside the job's own cgroup (containment.ts). An abort sends SIGTERM
 * to the group and the cgroup, then SIGKILL after the grace period. When the stage's shell exits,
 * whatever it left running is killed too, so background processes never outlive a stage (and never
 * hold its output pipe open): with a cgroup that includes `setsid` escapees; without one, `cleanup`
 * sweeps those by their environment marker at the end of the job.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import type { Logger } from '../../log.js';
import type { JobCgroup } from '../cgroup/job-cgroup.js';
import type { Executor, StageRequest, StageResult } from '../types.js';
import type { RunAs } from '../../agent/run-as.js';
import { commandAsUser, giveScript } from './as-user.js';
import { containJob, stageCommand, type JobContainment } from './containment.js';
import { groupAlive, JOB_MARKER_VARIABLE, signalGroup, sweepMarked } from './process-group.js';
import { writeStageScript, type ShellName } from './script.js';

export interface ShellExecutorOptions {
  shell: ShellName;
  /** Time between SIGTERM and SIGKILL, ms. */
  killGraceMs: number;
  logger?: Logger;
  /** false: process group + marker sweep even where a cgroup could be made (default: a cgroup where possible). */
  useCgroups?: boolean;
  /** Run the stages as this user (uid, gid, supplementary groups, HOME/USER/LOGNAME); the daemon stays root. */
  runAs?: RunAs;
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
    const scriptPath = await writeStageScript(this.options.shell, request);
    if (this.options.runAs) await giveScript(this.options.runAs, scriptPath);
    try {
      return await this.spawn(scriptPath, request);
    } finally {
      await rm(scriptPath, { force: true });
    }
  }

  private async spawn(scriptPath: string, request: StageRequest): Promise<StageResult> {
    if (request.signal.aborted) return { exitCode: null, aborted: true };
    const cgroup = this.jobCgroup;
    // As the job user through setpriv when `user` is set; the move into the cgroup comes first, as root.
    const asUser = this.options.runAs ? commandAsUser(this.options.runAs, this.options.shell, scriptPath) : undefined;
    const [file, args] = stageCommand(asUser ? [asUser.file, ...asUser.args] : [this.options.shell, scriptPath], cgroup);
    // node:child_process, not execa: the daemon keeps every module it ever loaded, and a stage needs
    // no more than a spawn with two pipes (bench/idle.ts: RSS after a job).
    const child = spawn(file, args, {
      cwd: request.scriptDir,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: stageEnv(asUser?.env, this.marker),
    });
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const pgid = child.pid;
    child.stdout?.on('data', (chunk: Uint8Array) => request.output(chunk));
    child.stderr?.on('data', (chunk: Uint8Array) => request.output(chunk));

    let aborted = false;
    let forceTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      aborted = true;
      if (pgid === undefined) return;
      signalGroup(pgid, 'SIGTERM');
      void cgroup?.signal('SIGTERM').catch(() => undefined);
      forceTimer = setTimeout(() => void this.forceKill(pgid), this.options.killGraceMs);
    };
    request.signal.addEventListener('abort', onAbort, { once: true });

    // The leader's exit, not the pipes closing: a leftover background process may hold the pipes.
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    const { code, signal } = await exited;
    request.signal.removeEventListener('abort', onAbort);
    if (pgid !== undefined) await this.stopLeftovers(pgid, aborted ? this.options.killGraceMs : Math.min(this.options.killGraceMs, 1000));
    if (forceTimer) clearTimeout(forceTimer);
    // Without a cgroup, escapees (setsid) are looked for after an abort here, and always at the end of
    // the job (`cleanup`); a /proc scan per normal stage would cost more than the stage itself.
    if (aborted) await this.sweep();
    // The pipes close once every writer is gone; bounded in case something unkillable holds them.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    return { exitCode: code, ...(signal ? { signal } : {}), aborted };
  }

  /** What a stage left running gets SIGTERM, `graceMs` to go, then SIGKILL. */
  private async stopLeftovers(pgid: number, graceMs: number): Promise<void> {
    const cgroup = this.jobCgroup;
    const groupLeft = await groupAlive(pgid);
    const cgroupLeft = cgroup ? await cgroup.populated().catch(() => false) : false;
    if (!groupLeft && !cgroupLeft) return;
    signalGroup(pgid, 'SIGTERM');
    if (cgroup) await cgroup.signal('SIGTERM').catch(() => 0);
    const deadline = Date.now() + graceMs;
    await waitGroupGone(pgid, graceMs);
    if (cgroup) await cgroup.waitEmpty(Math.max(0, deadline - Date.now())).catch(() => false);
    await this.forceKill(pgid);
    if (cgroupLeft) this.options.logger?.debug({ cgroup: cgroup?.dir }, 'killed processes a stage left in the job cgroup');
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

  /** Kills and removes the job's cgroup, then sweeps marked processes. The executor is done after it. */
  async cleanup(): Promise<void> {
    if (this.jobCgroup && !(await this.jobCgroup.destroy().catch(() => false))) {
      this.options.logger?.warn({ cgroup: this.jobCgroup.dir }, 'could not remove the job cgroup; the next start of the runner removes it');
    }
    await this.sweep();
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

async function waitGroupGone(pgid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await groupAlive(pgid)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
}
