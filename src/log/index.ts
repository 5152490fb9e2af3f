/**
 * One pino root logger per process; each part takes a `child({ component, runner, jobId })`.
 * Records are printed in GitLab Runner's formats (`runner`, `text`, `json`; format.ts) by a
 * formatting destination (stream.ts) and written synchronously to standard error, so standard
 * output stays for job logs and results. Tokens and the credentials in URLs are redacted by pino's
 * `redact` (redact.ts). A level or format change (a config reload) makes a new root logger.
 */
import { fstatSync } from 'node:fs';
import { pino, type DestinationStream, type LevelWithSilent, type Logger } from 'pino';
import type { LogFormat } from './format.js';
import { REDACT } from './redact.js';
import { formattingStream } from './stream.js';
import { countLogLine } from './level-counts.js';
import { logFormatOverride } from './format-choice.js';

export type { LevelWithSilent, Logger } from 'pino';
export type { LogFormat, LogLevel } from './format.js';
export { isLogFormat, LOG_FORMATS, setLogFormatOverride } from './format-choice.js';

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** `runner` (default), `text` or `json`; `--log-format` (see setLogFormatOverride) wins over it. */
  format?: LogFormat;
  /** Where to write; standard error (synchronously) by default. */
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

/** Whether standard error is connected to the journal. */
export function stderrIsJournal(): boolean {
  const stream = process.env.JOURNAL_STREAM;
  if (!stream) return false;
  try {
    const stat = fstatSync(2);
    return stream === `${stat.dev}:${stat.ino}`;
  } catch {
    return false;
  }
}

/** Creates the process's root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const toStderr = options.destination === undefined || options.destination === process.stderr;
  const destination = toStderr ? pino.destination({ dest: 2, sync: true }) : (options.destination as NodeJS.WritableStream & { write(text: string): boolean });
  const isTTY = toStderr ? process.stderr.isTTY === true : (options.destination as { isTTY?: boolean }).isTTY === true;
  const stream = formattingStream(destination, {
    format: logFormatOverride() ?? options.format ?? 'runner',
    colour: options.colour ?? isTTY,
    journald: options.journald ?? (toStderr && stderrIsJournal()),
  });
  return pino(
    {
      level: options.level ?? 'info',
      // No pid and host name on every line: `run` logs its pid once when it starts.
      base: null,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
      redact: REDACT,
      hooks: {
        logMethod(args, method, level) {
          countLogLine(level);
          method.apply(this, args);
        },
      },
    },
    stream,
  );
}

const nowhere: DestinationStream = { write: () => undefined };

/** A logger that drops everything, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent', base: null }, nowhere);
}
