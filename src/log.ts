/**
 * One root pino logger per process; each part takes a `child({ component })`. Logs are NDJSON; a
 * human at a TTY gets them pretty-printed unless `log_format = "json"`.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** `json` (NDJSON), `text` (pretty), or `runner` (pretty at a TTY, JSON otherwise). */
  format?: 'json' | 'text' | 'runner';
  /** Where to write; standard error by default so standard output stays for job logs and results. */
  destination?: NodeJS.WritableStream;
}

/** Creates the process's root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const destination = options.destination ?? process.stderr;
  const pretty =
    options.format === 'text' ||
    ((options.format ?? 'runner') === 'runner' && destination === process.stderr && process.stderr.isTTY === true);
  if (pretty) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true, ignore: 'pid,hostname' } },
    });
  }
  return pino({ level, base: { pid: process.pid } }, destination as pino.DestinationStream);
}

/** A logger that drops everything, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
