/** Shared pieces of the CLI commands: errors carrying an exit code, and duration flags. */
import { parseDurationMs } from '../util/duration.js';
import { CiRunnerError } from '../util/errors.js';

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
