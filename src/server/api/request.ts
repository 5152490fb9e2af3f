/** The request as runner API handlers see it, and the parameter reader they share. */
import type { IncomingMessage } from 'node:http';
import { bodyParams, mergeParams, readBody, type Params } from '../http/body.js';

export interface ApiRequest {
  req: IncomingMessage;
  query: URLSearchParams;
  /** The `{id}` of build routes (any integer, negative ones included). */
  buildId?: number;
  /** Aborts when the client disconnects or the server closes. */
  signal: AbortSignal;
}

/** Small bodies everywhere except E5, which carries whole traces. */
export const SMALL_BODY_LIMIT = 1024 * 1024;
export const TRACE_BODY_LIMIT = 64 * 1024 * 1024;

/** Query + body parameters (§2.3). */
export async function readParams(request: ApiRequest, limit = SMALL_BODY_LIMIT): Promise<Params> {
  const body = await readBody(request.req, limit, request.signal);
  return mergeParams(request.query, await bodyParams(request.req, body));
}

/** The build token: a `token` parameter wins over the `BUILD-TOKEN` header (§3, §12 item 6). */
export function buildTokenOf(request: ApiRequest, params: Params = {}): string | undefined {
  const param = params.token ?? request.query.get('token');
  if (typeof param === 'string' && param !== '') return param;
  const header = request.req.headers['build-token'];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === '' ? undefined : value;
}
