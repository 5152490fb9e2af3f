/**
 * The three line formats of `log_format` (GitLab Runner's names), printed from pino's records:
 * - `runner`: one human line per event, the message then `key=value` fields sorted by key, a
 *   `WARNING: ` / `ERROR: ` prefix as GitLab Runner writes it; no time (journald and `docker logs` add
 *   their own), colours only when writing to a terminal.
 * - `text`: the same with an ISO time and the level in front of every line, for files.
 * - `json`: one object per line: `time` (ISO), `level` (a name), `msg`, then the fields; every key once.
 */

export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LEVELS)[number];
export type LogFormat = 'runner' | 'text' | 'json';
export type Fields = Record<string, unknown>;

export interface LogRecord {
  time: Date;
  level: LogLevel;
  msg: string;
  /** The logger's bindings then the call's fields, each key once (a later one replaced an earlier one). */
  fields: Fields;
}

const RUNNER_PREFIX: Record<LogLevel, string> = { trace: 'TRACE: ', debug: 'DEBUG: ', info: '', warn: 'WARNING: ', error: 'ERROR: ', fatal: 'FATAL: ' };
const COLOUR: Record<LogLevel, string> = { trace: '\x1b[90m', debug: '\x1b[36m', info: '\x1b[32m', warn: '\x1b[33m', error: '\x1b[31m', fatal: '\x1b[35m' };
const RESET = '\x1b[0m';
/** Messages are padded to this width so the fields of consecutive lines start in one column. */
const MESSAGE_WIDTH = 52;

/** One line (with its newline) for `record` in `format`; `colour` only applies to `runner` and `text`. */
export function formatRecord(format: LogFormat, record: LogRecord, colour: boolean): string {
  if (format === 'json') return `${JSON.stringify({ time: record.time.toISOString(), level: record.level, msg: record.msg, ...record.fields })}\n`;
  const fields = logfmt(record.fields, colour);
  const msg = fields === '' ? record.msg : record.msg.padEnd(MESSAGE_WIDTH);
  if (format === 'runner') {
    const prefix = RUNNER_PREFIX[record.level];
    const head = colour && prefix !== '' ? `${COLOUR[record.level]}${prefix}${RESET}` : prefix;
    return `${head}${msg}${fields === '' ? '' : ` ${fields}`}\n`;
  }
  const level = record.level.toUpperCase().padEnd(5);
  const shown = colour ? `${COLOUR[record.level]}${level}${RESET}` : level;
  return `${record.time.toISOString()} ${shown} ${msg}${fields === '' ? '' : ` ${fields}`}\n`;
}

/** `key=value` pairs sorted by key; values with spaces, quotes or `=` are quoted. */
function logfmt(fields: Fields, colour: boolean): string {
  const parts: string[] = [];
  for (const key of Object.keys(fields).sort()) {
    const value = fields[key];
    if (value === undefined) continue;
    const text = quote(valueText(value));
    parts.push(colour ? `\x1b[2m${key}=${RESET}${text}` : `${key}=${text}`);
  }
  return parts.join(' ');
}

/** An error as pino's serializer records it: `{ type, message, stack, … }`. */
function isSerializedError(value: object): value is { message: string } {
  const record = value as Record<string, unknown>;
  return typeof record.type === 'string' && typeof record.message === 'string' && typeof record.stack === 'string';
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return isSerializedError(value) ? value.message : JSON.stringify(value);
  return String(value);
}

function quote(text: string): string {
  // Control characters would let a value forge a line of its own; JSON escapes them.
  return text === '' || /[\s"=\\\x00-\x1f\x7f]/.test(text) ? JSON.stringify(text) : text;
}
