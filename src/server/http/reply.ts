/**
 * Handlers return a `Reply` instead of writing to the response, so the fault layer can replace or
 * cut an answer after the handler has changed state (`apply_then_error`, `close`).
 */
import type { Readable } from 'node:stream';
import { CiRunnerError } from '../../util/errors.js';

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer | Readable;
}

/** A JSON reply with the exact media type the legacy client insists on (§2.4). */
export function json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(value) };
}

/** An error reply `{"message": ...}` (§2.4, §12 item 5). */
export function errorReply(status: number, message?: string, headers: Record<string, string> = {}): Reply {
  return json(status, { message: message ?? defaultMessage(status) }, headers);
}

export function defaultMessage(status: number): string {
  const texts: Record<number, string> = {
    400: '400 Bad Request',
    401: '401 Unauthorized',
    403: '403 Forbidden',
    404: '404 Not Found',
    405: '405 Method Not Allowed',
    413: '413 Request Entity Too Large',
    416: '416 Range Not Satisfiable',
    500: '500 Internal Server Error',
    502: '502 Bad Gateway',
    503: '503 Service Unavailable',
  };
  return texts[status] ?? `${status}`;
}

/** Thrown by request parsing to short-circuit with a status; the dispatcher turns it into a reply. */
export class HttpError extends CiRunnerError {
  readonly status: number;

  constructor(status: number, message?: string) {
    super('HTTP_ERROR', message ?? defaultMessage(status));
    this.status = status;
  }
}
