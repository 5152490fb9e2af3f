/**
 * pino's destination: each record pino serialises (one JSON line) is printed in the chosen format
 * (format.ts) and written at once to the real destination, standard error by default, through
 * pino's synchronous `sonic-boom` destination: no worker thread, and no line is lost when the process
 * exits or crashes right after logging it.
 */
import type { DestinationStream } from 'pino';
import { formatRecord, LEVELS, type Fields, type LogFormat, type LogLevel } from './format.js';

export interface FormatOptions {
  format: LogFormat;
  colour: boolean;
  /** Start each line with its syslog priority (`<4>` for a warning), for journald. */
  journald: boolean;
}

/** syslog priorities of the levels (debug 7 … crit 2), as journald reads them. */
const PRIORITY: Record<LogLevel, number> = { trace: 7, debug: 7, info: 6, warn: 4, error: 3, fatal: 2 };

const isLevel = (value: unknown): value is LogLevel => typeof value === 'string' && (LEVELS as readonly string[]).includes(value);

/** A pino destination that prints its records as `options` says onto `destination`. */
export function formattingStream(destination: { write(text: string): unknown; flushSync?: () => void }, options: FormatOptions): DestinationStream & { flush(done?: (error?: Error) => void): void } {
  return {
    write(line: string): void {
      const text = formatLine(line, options);
      if (text !== undefined) destination.write(text);
    },
    /** pino's `logger.flush(done)`: lines are written as they come, so only a buffered destination has anything left. */
    flush(done?: (error?: Error) => void): void {
      destination.flushSync?.();
      done?.();
    },
  };
}

/** One pino line in `options.format`, with the journald prefix when asked for; undefined for a line that is not a record. */
export function formatLine(line: string, options: FormatOptions): string | undefined {
  let raw: Fields;
  try {
    raw = JSON.parse(line) as Fields;
  } catch {
    return undefined;
  }
  const { time, level, msg, ...fields } = raw;
  const known = isLevel(level) ? level : 'info';
  const record = { time: new Date(typeof time === 'number' ? time : Date.now()), level: known, msg: typeof msg === 'string' ? msg : '', fields };
  const text = formatRecord(options.format, record, options.colour);
  return options.journald ? `<${PRIORITY[known]}>${text}` : text;
}
