/**
 * Short commands the runner runs itself and reads the answer of (git, `getent`/`id`, `docker version`,
 * the cgroup probe), through execa. Every execa option that changes what a caller sees is chosen here,
 * once: the daemon's environment plus `env`, stdin from /dev/null, output kept as it came (no final
 * newline stripped), and a failure is a result (`failed`, `exitCode`, `signal`, `timedOut`,
 * `isCanceled`, `code` for a spawn error), never a rejection. execa's `cleanup` stays on: a command
 * still running when the runner exits is killed with it.
 *
 * execa is loaded on the first call, not when a module that may run a command is loaded: the `run`
 * daemon and `exec` start without paying for it (~80 ms of CPU here), and a daemon whose jobs never
 * need one of these commands never loads it for them.
 */
import type { Result } from 'execa';

export interface CommandOptions {
  cwd?: string;
  /** Added to the daemon's environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Aborting stops the command: `killSignal`, then SIGKILL after `forceKillAfterMs`; the result says `isCanceled`. */
  signal?: AbortSignal;
  /** Stops the command the same way after this long; the result says `timedOut`. */
  timeoutMs?: number;
  /** The first signal of a stop (default SIGTERM). */
  killSignal?: NodeJS.Signals;
  /** Time between `killSignal` and SIGKILL (default 5 s); false: no SIGKILL. */
  forceKillAfterMs?: number | false;
  /** Largest stdout or stderr kept, in characters (default 16 MiB); past it the command is stopped and `isMaxBuffer`. */
  maxBuffer?: number;
}

/** The options every command runs with, beside those of `CommandOptions`. */
const FIXED = { stdin: 'ignore', encoding: 'utf8', stripFinalNewline: false, reject: false, extendEnv: true } as const;

export type CommandResult = Result<typeof FIXED>;

/** Runs `file args` to its end and resolves with what it printed and how it ended; never rejects for the command's sake. */
export async function runCommand(file: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
  const { execa } = await import('execa');
  return execa(file, args, {
    ...FIXED,
    maxBuffer: options.maxBuffer ?? 16 * 1024 * 1024,
    forceKillAfterDelay: options.forceKillAfterMs ?? 5_000,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { cancelSignal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    ...(options.killSignal ? { killSignal: options.killSignal } : {}),
  });
}

/** The last non-empty line of a command's output ('' when there is none). */
export function lastLine(text: string | undefined): string {
  const lines = (text ?? '').split('\n').map((line) => line.trim()).filter((line) => line !== '');
  return lines[lines.length - 1] ?? '';
}
