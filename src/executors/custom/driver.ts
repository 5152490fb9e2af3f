/**
 * One call of a custom executor driver program (config_exec, prepare_exec, run_exec, cleanup_exec), as
 * GitLab Runner 19 makes it (executors/custom/command): the program leads a process group of its own
 * (`detached`), in the job's temporary dir, with the environment it is given; when `signal` aborts or
 * `timeoutMs` passes, SIGTERM goes to the whole group, SIGKILL after `gracefulKillMs`, and after
 * `forceKillMs` more the call is given up on (GitLab Runner abandons the process then too). The exit
 * code is read as the driver contract says (docs/executors/custom.md "Error handling"):
 * BUILD_FAILURE_EXIT_CODE is the job's script failing, with the code the driver wrote to
 * BUILD_EXIT_CODE_FILE; SYSTEM_FAILURE_EXIT_CODE or any other non-zero code is the runner's failure.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { CiRunnerError } from '../../util/errors.js';
import { ExecutorSetupError } from '../types.js';
import { BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE } from './options.js';

export type DriverErrorCode = 'DRIVER_NOT_CONFIGURED' | 'DRIVER_NOT_STARTED' | 'DRIVER_SYSTEM_FAILURE' | 'DRIVER_UNKNOWN_EXIT' | 'DRIVER_STOPPED' | 'DRIVER_BAD_CONFIG' | 'DRIVER_BUILD_FAILURE';

/** A driver call that failed the runner's way (runner_system_failure, or a configuration error). */
export class DriverError extends ExecutorSetupError {
  declare readonly code: DriverErrorCode;

  constructor(code: DriverErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** The driver said the job's script failed (BUILD_FAILURE_EXIT_CODE), with this exit code. */
export class DriverBuildFailure extends CiRunnerError {
  constructor(readonly exitCode: number) {
    super('DRIVER_BUILD_FAILURE', `exit status ${exitCode}`);
  }
}

export interface DriverCall {
  /** Which key named the program (`run_exec`), for messages. */
  role: string;
  program: string;
  args: readonly string[];
  /** The whole environment of the call. */
  env: Readonly<Record<string, string>>;
  /** The job's temporary dir: the call's working directory. */
  cwd: string;
  stdout: (chunk: Uint8Array) => void;
  stderr: (chunk: Uint8Array) => void;
  /** BUILD_EXIT_CODE_FILE, read when the driver exits with BUILD_FAILURE_EXIT_CODE. */
  exitCodeFile: string;
  signal?: AbortSignal;
  /** The call's own limit (config_exec_timeout, …); none for run_exec, which the job's signal bounds. */
  timeoutMs?: number;
  gracefulKillMs: number;
  forceKillMs: number;
}

export type DriverOutcome =
  | { kind: 'ok' }
  /** The script failed: BUILD_FAILURE_EXIT_CODE, with the code of BUILD_EXIT_CODE_FILE. */
  | { kind: 'build-failure'; exitCode: number }
  /** Stopped by the job's signal (cancel, job timeout) or its own timeout; `killedAfterMs` when SIGTERM was not enough. */
  | { kind: 'stopped'; timedOut: boolean; killedAfterMs?: number; abandoned?: boolean };

/** How long the output pipes may stay open after the program exited (a child it left holds them). */
const OUTPUT_DRAIN_MS = 2_000;

/**
 * Runs one driver call. Resolves `ok`, `build-failure` or `stopped`; throws DriverError when the program
 * cannot be started or exits with SYSTEM_FAILURE_EXIT_CODE or an unknown code.
 */
export async function callDriver(call: DriverCall): Promise<DriverOutcome> {
  const exit = await runGroup(call);
  if (exit.kind === 'stopped') return exit;
  if (exit.code === 0) return { kind: 'ok' };
  if (exit.code === BUILD_FAILURE_EXIT_CODE) return buildFailure(call);
  if (exit.code === SYSTEM_FAILURE_EXIT_CODE) throw new DriverError('DRIVER_SYSTEM_FAILURE', `${call.role} ${call.program}: exit status ${SYSTEM_FAILURE_EXIT_CODE} (the driver reported a system failure)`);
  const status = exit.code === null ? `signal: ${exit.signal ?? 'unknown'}` : `exit status ${exit.code}`;
  throw new DriverError('DRIVER_UNKNOWN_EXIT', `unknown Custom executor executable exit code ${exit.code ?? -1}; executable execution terminated with: ${status} (${call.role} ${call.program})`);
}

/** BUILD_EXIT_CODE_FILE's first line, when the driver wrote one; GitLab Runner's 1 otherwise. */
async function buildFailure(call: DriverCall): Promise<DriverOutcome> {
  const text = await readFile(call.exitCodeFile, 'utf8').catch(() => undefined);
  if (text === undefined) return { kind: 'build-failure', exitCode: BUILD_FAILURE_EXIT_CODE };
  const first = text.split('\n')[0]?.trim() ?? '';
  if (!/^-?\d{1,9}$/.test(first)) {
    throw new DriverError('DRIVER_UNKNOWN_EXIT', `unknown Custom executor executable exit code ${SYSTEM_FAILURE_EXIT_CODE}; executable execution terminated with: BUILD_EXIT_CODE_FILE holds ${JSON.stringify(first.slice(0, 40))}, not an exit code (${call.role} ${call.program})`);
  }
  return { kind: 'build-failure', exitCode: Number(first) };
}

type GroupExit = { kind: 'exited'; code: number | null; signal: string | null } | Extract<DriverOutcome, { kind: 'stopped' }>;

function runGroup(call: DriverCall): Promise<GroupExit> {
  return new Promise((resolve, reject) => {
    if (call.signal?.aborted) {
      resolve({ kind: 'stopped', timedOut: false });
      return;
    }
    const child = spawn(call.program, [...call.args], { cwd: call.cwd, env: call.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => call.stdout(chunk));
    child.stderr.on('data', (chunk: Buffer) => call.stderr(chunk));
    const timers: NodeJS.Timeout[] = [];
    let stopping: { timedOut: boolean; killedAfterMs?: number } | undefined;
    let settled = false;
    const finish = (result: GroupExit): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const group = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // the group is gone
      }
    };
    const stop = (timedOut: boolean): void => {
      if (stopping || settled) return;
      stopping = { timedOut };
      group('SIGTERM');
      timers.push(
        setTimeout(() => {
          if (stopping) stopping.killedAfterMs = call.gracefulKillMs;
          group('SIGKILL');
          // GitLab Runner gives up on a process SIGKILL did not end within force_kill_timeout.
          timers.push(setTimeout(() => finish({ kind: 'stopped', timedOut, killedAfterMs: call.gracefulKillMs, abandoned: true }), call.forceKillMs).unref());
        }, call.gracefulKillMs).unref(),
      );
    };
    const onAbort = (): void => stop(false);
    call.signal?.addEventListener('abort', onAbort, { once: true });
    if (call.timeoutMs !== undefined) timers.push(setTimeout(() => stop(true), call.timeoutMs).unref());
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
      reject(notStarted(call, error));
    });
    child.once('exit', (code, signal) => {
      const result: GroupExit = stopping ? { kind: 'stopped', ...stopping } : { kind: 'exited', code, signal };
      // The output of the program itself is in the pipes; a child it left running may hold them open.
      const drained = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(result);
      }, OUTPUT_DRAIN_MS);
      child.once('close', () => {
        clearTimeout(drained);
        finish(result);
      });
    });
  });
}

function notStarted(call: DriverCall, error: NodeJS.ErrnoException): DriverError {
  const why = error.code === 'ENOENT' ? 'no such file (or its interpreter is missing)' : error.code === 'EACCES' ? 'permission denied (is it executable? chmod +x)' : error.message;
  return new DriverError('DRIVER_NOT_STARTED', `failed to start command: ${call.role} ${JSON.stringify(call.program)}: ${why}`, { cause: error });
}
