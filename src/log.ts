/**
 * One root logger per process; each part takes a `child({ component })`. The call sites use pino's
 * shape (`logger.info({ key: value }, 'message')`, `logger.warn('message')`), but this is our own
 * small logger: an idle daemon should not carry pino's worker-thread transport and serializers, and
 * the formats are GitLab Runner's (`runner`, `text`, `json`; see log/format.ts). Lines are written
 * synchronously to standard error, so standard output stays for job logs and results.
 */
import { fstatSync } from 'node:fs';
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
  /**
   * Start each line with its syslog priority (`<4>` for a warning), which journald reads and strips
   * (`SyslogLevelPrefix=`), so `journalctl -p warning` works; by default when standard error is the
   * journal's stream (systemd sets JOURNAL_STREAM to its device and inode).
   */
  journald?: boolean;
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
  journald: boolean;
}

/** syslog priorities of the levels (debug 7 … crit 2), as journald reads them. */
const PRIORITY: Record<LogLevel, number> = { trace: 7, debug: 7, info: 6, warn: 4, error: 3, fatal: 2 };

/** Whether `destination` is standard error and that is connected to the journal. */
function writesToJournal(destination: NodeJS.WritableStream): boolean {
  const stream = process.env.JOURNAL_STREAM;
  if (destination !== process.stderr || !stream) return false;
  try {
    const stat = fstatSync(2);
    return stream === `${stat.dev}:${stat.ino}`;
  } catch {
    return false;
  }
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
    journald: options.journald ?? writesToJournal(destination),
  };
  return makeLogger(core, {});
}

/** A logger that drops everything, for tests and library use. */
export function silentLogger(): Logger {
  return makeLogger({ rank: SILENT, write: () => undefined, format: 'json', colour: false, journald: false }, {});
}

function makeLogger(core: Core, bindings: Fields): Logger {
  const at = (level: LogLevel): LogFn => {
    const rank = LEVELS.indexOf(level);
    return (first: object | string, msg?: string): void => {
      if (rank < core.rank) return;
      const own = typeof first === 'string' ? undefined : (first as Fields);
      const text = typeof first === 'string' ? first : (msg ?? '');
      const fields = own ? { ...bindings, ...own } : bindings;
      const line = formatRecord(core.format, { time: new Date(), level, msg: text, fields }, core.colour);
      core.write(core.journald ? `<${PRIORITY[level]}>${line}` : line);
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
