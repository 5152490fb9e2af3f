/**
 * Request bodies and parameters (docs/protocol-v1.md §2.3): the real server merged the query string, a
 * form-encoded or multipart body and a JSON body into one `params` map; so does this module. Bodies
 * are read elsewhere (`guarded-body.ts`: size caps, memory pools, the token checked first) and on
 * DELETE too (E2 sends JSON with DELETE).
 */
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { HttpError } from './reply.js';

export type Params = Record<string, unknown>;

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Parses a buffered body by its Content-Type; unknown types contribute no parameters. */
export async function bodyParams(req: IncomingMessage, body: Buffer): Promise<Params> {
  const type = mediaType(req);
  if (body.byteLength === 0) return {};
  if (type === 'application/json' || type.endsWith('+json')) {
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new HttpError(400, `400 Bad Request - malformed JSON body: ${(error as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new HttpError(400, '400 Bad Request - the JSON body must be an object');
    }
    return value as Params;
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  if (type === 'multipart/form-data') return multipartFields(req, body);
  return {};
}

/** The text fields of a buffered multipart body (files are ignored here; E7 streams its own). */
function multipartFields(req: IncomingMessage, body: Buffer): Promise<Params> {
  return new Promise<Params>((resolve, reject) => {
    const fields: Params = {};
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fieldSize: 1 << 20 } });
    } catch (error) {
      reject(new HttpError(400, `400 Bad Request - malformed multipart body: ${(error as Error).message}`));
      return;
    }
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (_name, stream) => stream.resume());
    parser.on('error', (error: Error) => reject(new HttpError(400, `400 Bad Request - malformed multipart body: ${error.message}`)));
    parser.on('close', () => resolve(fields));
    parser.end(body);
  });
}

/** Query parameters, then body parameters on top (the body wins, as JSON did in Grape). */
export function mergeParams(query: URLSearchParams, body: Params): Params {
  return { ...Object.fromEntries(query), ...body };
}

/** A parameter as a non-empty string, or undefined. */
export function stringParam(params: Params, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A boolean parameter from JSON (`true`) or a form (`"true"`, `"1"`); `fallback` when absent. */
export function boolParam(params: Params, name: string, fallback: boolean): boolean {
  const value = params[name];
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    if (/^(true|1|yes|on)$/i.test(value)) return true;
    if (/^(false|0|no|off)$/i.test(value)) return false;
  }
  return fallback;
}
