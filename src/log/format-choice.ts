/**
 * Which line format the process's loggers use: the names, and the command line's choice
 * (`--log-format` / LOG_FORMAT), which wins over config.toml's `log_format` as in GitLab Runner. Apart
 * from the logger itself, so the command line can set it without loading pino (`--version` does not).
 */
import type { LogFormat } from './format.js';

export const LOG_FORMATS: readonly LogFormat[] = ['runner', 'text', 'json'];

let formatOverride: LogFormat | undefined;

/** `--log-format` / LOG_FORMAT: used by every logger created afterwards instead of the config's `log_format`. */
export function setLogFormatOverride(format: LogFormat | undefined): void {
  formatOverride = format;
}

/** The command line's format, if it named one. */
export function logFormatOverride(): LogFormat | undefined {
  return formatOverride;
}

/** Whether `value` names a format. */
export function isLogFormat(value: unknown): value is LogFormat {
  return typeof value === 'string' && (LOG_FORMATS as readonly string[]).includes(value);
}
