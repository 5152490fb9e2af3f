/**
 * One root logger per process; each part takes a `child({ component })`. The call sites use pino's
 * shape (`logger.info({ key: value }, 'message')`, `logger.warn('message')`), but this is our own
 * small logger: an idle daemon should not carry pino's worker-thread transport and serializers, and
 * the formats are GitLab Runner's (`runner`, `text`, `json`; see log/format.ts). Lines are written
 * synchronously to standard error, so standard output stays for job logs and results.
 */
import { formatRecord, LEVELS, type Fields, type LogFormat, type LogLevel } from './log/format.js';

export type { LogFormat, LogLevel } from './log/format.js';
export type LevelWithSilent = LogLevel | 'silent';
export const LOG_FORMATS: readonly LogFormat[] = ['runner', 'text', 'json'];

export interface LogFn {
  (fields: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  /** The lowest level written; shared by the root and all its children. */
  level: LevelWithSilent;
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** A logger whose lines carry `bindings` too (the call's own fields win over them). */
  child(bindings: Fields): Logger;
  isLevelEnabled(level: LogLevel): boolean;
  /** Lines are written synchronously; kept for callers that flush before exiting. */
  flush(): void;
}

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** `runner` (default), `text` or `json`; `--log-format` (see setLogFormatOverride) wins over it. */
  format?: LogFormat;
  /** Where to write; standard error by default. */
  destination?: NodeJS.WritableStream;
  /** Colours for `runner` and `text`; by default only when the destination is a terminal. */
  colour?: boolean;
}

let formatOverride: LogFormat | undefined;

/**
 * `--log-format` / LOG_FORMAT: used by every logger created afterwards instead of the config's
 * `log_format` (as in GitLab Runner, the command line wins over config.toml).
 */
export function setLogFormatOverride(format: LogFormat | undefined): void {
  formatOverride = format;
}

/** Whether `value` names a format. */
export function isLogFormat(value: unknown): value is LogFormat {
  return typeof value === 'string' && (LOG_FORMATS as readonly string[]).includes(value);
}

interface Core {
  rank: number;
  write: (line: string) => void;
  format: LogFormat;
  colour: boolean;
}

const SILENT = LEVELS.length;

function rankOf(level: LevelWithSilent): number {
  return level === 'silent' ? SILENT : LEVELS.indexOf(level);
}

/** Creates the process's root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const colour = options.colour ?? (destination as { isTTY?: boolean }).isTTY === true;
  const core: Core = {
    rank: rankOf(options.level ?? 'info'),
    write: (line) => void destination.write(line),
    format: formatOverride ?? options.format ?? 'runner',
    colour,
  };
  return makeLogger(core, {});
}

/** A logger that drops everything, for tests and library use. */
export function silentLogger(): Logger {
  return makeLogger({ rank: SILENT, write: () => undefined, format: 'json', colour: false }, {});
}

function makeLogger(core: Core, bindings: Fields): Logger {
  const at = (level: LogLevel): LogFn => {
    const rank = LEVELS.indexOf(level);
    return (first: object | string, msg?: string): void => {
      if (rank < core.rank) return;
      const own = typeof first === 'string' ? undefined : (first as Fields);
      const text = typeof first === 'string' ? first : (msg ?? '');
      const fields = own ? { ...bindings, ...own } : bindings;
      core.write(formatRecord(core.format, { time: new Date(), level, msg: text, fields }, core.colour));
    };
  };
  return {
    get level(): LevelWithSilent {
      return core.rank >= SILENT ? 'silent' : (LEVELS[core.rank] ?? 'info');
    },
    set level(level: LevelWithSilent) {
      core.rank = rankOf(level);
    },
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    child: (more) => makeLogger(core, { ...bindings, ...more }),
    isLevelEnabled: (level) => LEVELS.indexOf(level) >= core.rank,
    flush: () => undefined,
  };
}
