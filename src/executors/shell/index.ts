/**
 * The shell executor: each stage is a generated bash/sh script run on this host as a plain (non-login)
 * shell — a login shell per stage costs ~100 ms for nothing. The stage is its own process group; an
 * abort sends SIGTERM to the group, then SIGKILL after the grace period. When the stage's shell exits,
 * whatever it left running in its group is killed too, so background processes never outlive a stage
 * (and never hold its output pipe open). `cleanup` sweeps processes that escaped the group.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Logger } from '../../log.js';
import type { Executor, StageRequest, StageResult } from '../types.js';
import type { RunAs } from '../../agent/run-as.js';
import { commandAsUser, giveScript } from './as-user.js';
import { groupAlive, JOB_MARKER_VARIABLE, signalGroup, sweepMarked } from './process-group.js';
import { generateScript, type ShellName } from './script.js';

export interface ShellExecutorOptions {
  shell: ShellName;
  /** Time between SIGTERM and SIGKILL, ms. */
  killGraceMs: number;
  logger?: Logger;
  /** Run the stages as this user (uid, gid, supplementary groups, HOME/USER/LOGNAME); the daemon stays root. */
  runAs?: RunAs;
}

/** Runs a job's stages as local bash/sh processes; one instance per job. */
export class ShellExecutor implements Executor {
  readonly name = 'shell';
  /** Tags every process of this job (see process-group.ts). */
  readonly marker = randomBytes(12).toString('hex');

  constructor(private readonly options: ShellExecutorOptions) {}

  async runStage(request: StageRequest): Promise<StageResult> {
    const script = generateScript({
      shell: this.options.shell,
      variables: request.variables,
      workDir: request.workDir,
      commands: request.commands,
      echoCommands: request.echoCommands,
      ...(request.debugTrace ? { debugTrace: true } : {}),
    });
    // A file rather than stdin: a job command that reads stdin would otherwise eat the rest of the script.
    const scriptPath = join(request.scriptDir, `${request.stage}-${randomBytes(4).toString('hex')}.sh`);
    await writeFile(scriptPath, script, { mode: 0o600 });
    if (this.options.runAs) await giveScript(this.options.runAs, scriptPath);
    try {
      return await this.spawn(scriptPath, request);
    } finally {
      await rm(scriptPath, { force: true });
    }
  }

  private async spawn(scriptPath: string, request: StageRequest): Promise<StageResult> {
    if (request.signal.aborted) return { exitCode: null, aborted: true };
    const asUser = this.options.runAs ? commandAsUser(this.options.runAs, this.options.shell, scriptPath) : undefined;
    const child = execa(asUser?.file ?? this.options.shell, asUser?.args ?? [scriptPath], {
      cwd: request.scriptDir,
      detached: true,
      stdin: 'ignore',
      buffer: false,
      reject: false,
      // The daemon's environment, minus the runner's own secrets (run-once reads its token from it).
      env: { ...asUser?.env, [JOB_MARKER_VARIABLE]: this.marker, CI_SERVER_TOKEN: undefined, REGISTRATION_TOKEN: undefined },
      // We kill the group ourselves; execa's own kill only reaches the leader.
      forceKillAfterDelay: false,
    });
    const pgid = child.pid;
    child.stdout?.on('data', (chunk: Uint8Array) => request.output(chunk));
    child.stderr?.on('data', (chunk: Uint8Array) => request.output(chunk));

    let aborted = false;
    let forceTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      aborted = true;
      if (pgid === undefined) return;
      signalGroup(pgid, 'SIGTERM');
      forceTimer = setTimeout(() => this.forceKill(pgid), this.options.killGraceMs);
    };
    request.signal.addEventListener('abort', onAbort, { once: true });

    // The leader's exit, not the pipes closing: a leftover background process may hold the pipes.
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    const { code, signal } = await exited;
    request.signal.removeEventListener('abort', onAbort);
    if (pgid !== undefined && (await groupAlive(pgid))) {
      signalGroup(pgid, 'SIGTERM');
      await waitGroupGone(pgid, aborted ? this.options.killGraceMs : Math.min(this.options.killGraceMs, 1000));
      this.forceKill(pgid);
    }
    if (forceTimer) clearTimeout(forceTimer);
    // Escapees (setsid) are looked for after an abort here, and always at the end of the job
    // (`cleanup`); a /proc scan per normal stage would cost more than the stage itself.
    if (aborted) await this.sweep();
    // The pipes close once every writer is gone; bounded in case something unkillable holds them.
    await Promise.race([child.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    return { exitCode: code, ...(signal ? { signal } : {}), aborted };
  }

  private forceKill(pgid: number): void {
    signalGroup(pgid, 'SIGKILL');
  }

  private async sweep(): Promise<void> {
    const killed = await sweepMarked(this.marker);
    if (killed > 0) this.options.logger?.debug({ killed }, 'killed processes that left the stage process group');
  }

  async cleanup(): Promise<void> {
    await this.sweep();
  }
}

async function waitGroupGone(pgid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await groupAlive(pgid)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
}
