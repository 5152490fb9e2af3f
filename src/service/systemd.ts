/**
 * Talking to systemd through `systemctl`. systemd counts as present only when `systemctl` is on PATH
 * and the machine booted with it (`/run/systemd/system` exists, as sd_booted(3) checks): in a
 * container without an init, `systemctl` exists but cannot do anything useful.
 */
import { access, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { CiRunnerError } from '../util/errors.js';

/** Exit code of every service command when systemd is not there (sysexits' EX_UNAVAILABLE). */
export const NO_SYSTEMD_EXIT_CODE = 69;

/** The directory `install` writes units to when systemd manages this machine. */
export const SYSTEM_UNIT_DIR = '/etc/systemd/system';

export class SystemdUnavailableError extends CiRunnerError {
  readonly exitCode = NO_SYSTEMD_EXIT_CODE;
  constructor(reason: string) {
    super('SYSTEMD_UNAVAILABLE', `systemd is not available here (${reason}); run \`ci-runner run\` under your own supervisor, or use \`install --unit-dir DIR\` to only write the unit file`);
  }
}

export class SystemctlError extends CiRunnerError {
  readonly exitCode = 1;
}

/** Why systemd cannot be used here, or undefined when it can. `env` and `runDir` are for tests. */
export async function systemdMissingReason(env: NodeJS.ProcessEnv = process.env, runDir = '/run/systemd/system'): Promise<string | undefined> {
  if (!(await onPath('systemctl', env.PATH ?? ''))) return 'no systemctl on PATH';
  const booted = await stat(runDir).then((s) => s.isDirectory(), () => false);
  return booted ? undefined : `this machine was not booted with systemd: ${runDir} is missing`;
}

/** Throws SystemdUnavailableError unless systemd manages this machine. */
export async function requireSystemd(): Promise<void> {
  const reason = await systemdMissingReason();
  if (reason) throw new SystemdUnavailableError(reason);
}

async function onPath(command: string, path: string): Promise<boolean> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    if (await access(join(dir, command), 1).then(() => true, () => false)) return true;
  }
  return false;
}

/** Runs `systemctl ...args`; a non-zero exit is a SystemctlError with systemctl's own message. */
export async function systemctl(args: string[]): Promise<string> {
  const result = await execa('systemctl', args, { reject: false, all: true, stdin: 'ignore' });
  if (result.exitCode !== 0) {
    throw new SystemctlError('SYSTEMCTL_FAILED', `systemctl ${args.join(' ')} failed (exit ${result.exitCode ?? result.signal}): ${String(result.all ?? '').trim()}`);
  }
  return String(result.stdout ?? '');
}

export interface ServiceState {
  loadState: string;
  activeState: string;
  subState: string;
  mainPid: number;
}

/** Parses `systemctl show --property=LoadState,ActiveState,SubState,MainPID` output. */
export function parseShow(text: string): ServiceState {
  const props = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  return {
    loadState: props.get('LoadState') ?? 'unknown',
    activeState: props.get('ActiveState') ?? 'unknown',
    subState: props.get('SubState') ?? 'unknown',
    mainPid: Number(props.get('MainPID') ?? 0) || 0,
  };
}

/** `status` exit codes, after LSB's init-script status codes. */
export const STATUS_EXIT = { running: 0, stopped: 3, notInstalled: 4 } as const;

/** The exit code and one line for a service's state. */
export function describeState(service: string, state: ServiceState): { exitCode: number; line: string } {
  if (state.loadState === 'not-found') return { exitCode: STATUS_EXIT.notInstalled, line: `${service}: not installed (no ${service}.service unit; see \`ci-runner install\`)` };
  const running = state.activeState === 'active' || state.activeState === 'reloading';
  const detail = `${state.activeState} (${state.subState})${state.mainPid > 0 ? `, pid ${state.mainPid}` : ''}`;
  return running
    ? { exitCode: STATUS_EXIT.running, line: `${service}: Service is running: ${detail}` }
    : { exitCode: STATUS_EXIT.stopped, line: `${service}: Service is not running: ${detail}` };
}
