/**
 * Shared pieces of the CLI commands: errors carrying an exit code, duration flags, and the
 * two-step signal handling of `run` and `run-once`.
 */
import { parseDurationMs } from '../util/duration.js';
import { CiRunnerError } from '../util/errors.js';
import type { Logger } from '../log/index.js';

/** Exit codes (see src/cli/main.ts). */
export const EXIT = { ok: 0, jobFailed: 1, usage: 2, coordinator: 3, noJob: 4 } as const;

/** An error that ends the command with a given exit code and a message for the user. */
export class CommandError extends CiRunnerError {
  constructor(readonly exitCode: number, message: string, code = 'COMMAND_FAILED') {
    super(code, message);
  }
}

/** Parses a duration flag (`60`, `60s`, `2m`, `1h30m`, `500ms`; a bare number is seconds) into milliseconds. */
export function parseDuration(text: string | number, flag: string): number {
  const ms = typeof text === 'number' ? Math.round(text * 1000) : parseDurationMs(text);
  if (ms === undefined || ms < 0) throw new CommandError(EXIT.usage, `--${flag}: "${text}" is not a duration; use e.g. 60s, 2m, 1h30m`);
  return ms;
}

export interface StopSignals {
  /** First SIGTERM/SIGINT/SIGQUIT. */
  first: AbortSignal;
  /** The signal name that started the shutdown. */
  readonly received: NodeJS.Signals | undefined;
  dispose(): void;
}

/**
 * Installs handlers: the first SIGTERM/SIGINT/SIGQUIT calls `onFirst`, a second SIGTERM/SIGINT calls
 * `onSecond` (SIGQUIT behaves as a first signal only, as in GitLab Runner).
 */
export function handleStopSignals(logger: Logger, onFirst: () => void, onSecond: () => void): StopSignals {
  const first = new AbortController();
  let received: NodeJS.Signals | undefined;
  const handler = (signal: NodeJS.Signals): void => {
    if (!first.signal.aborted) {
      received = signal;
      logger.info({ signal }, 'stop signal received; finishing running jobs (send it again to cancel them now)');
      first.abort();
      onFirst();
    } else if (signal !== 'SIGQUIT') {
      logger.warn({ signal }, 'second stop signal: canceling running jobs');
      onSecond();
    }
  };
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGQUIT'];
  for (const s of signals) process.on(s, handler);
  return {
    first: first.signal,
    get received() {
      return received;
    },
    dispose: () => {
      for (const s of signals) process.off(s, handler);
    },
  };
}
