/** The request as runner API handlers see it, and the guarded parameter reader they share. */
import type { IncomingMessage } from 'node:http';
import type { ServerContext } from '../context.js';
import { bodyParams, mergeParams, type Params } from '../http/body.js';
import { readGuardedBody, type TokenGate } from '../http/guarded-body.js';
import { errorReply, type Reply } from '../http/reply.js';
import { registrationScope } from '../state/runner-registry.js';

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

export type ParamsResult = { ok: true; params: Params } | { ok: false; reply: Reply };

/**
 * Query + body parameters (§2.3), the body read only as far as `gate` trusts the sender: a request
 * without a valid token is refused before its body is buffered (http/guarded-body.ts).
 */
export async function readParams(ctx: ServerContext, request: ApiRequest, gate: TokenGate, limit = SMALL_BODY_LIMIT): Promise<ParamsResult> {
  const read = await readGuardedBody(request.req, limit, ctx.bodies, gate, request.signal);
  if (!read.ok) return read;
  return { ok: true, params: mergeParams(request.query, await bodyParams(request.req, read.body)) };
}

/** Accepts a runner token (E2–E5). */
export function runnerGate(ctx: ServerContext, request: ApiRequest): TokenGate {
  return {
    upfront: nonEmpty(request.query.get('token')),
    check: (token) => (ctx.store.runnerByToken(token) ? undefined : errorReply(403)),
  };
}

/** Accepts the instance registration token or a project's runners token (E1). */
export function registrationGate(ctx: ServerContext, request: ApiRequest): TokenGate {
  return {
    upfront: nonEmpty(request.query.get('token')),
    check: (token) => (registrationScope(ctx, token) ? undefined : errorReply(403)),
  };
}

/** Accepts the token of one build (E6–E9): `token` parameter or `BUILD-TOKEN` header. */
export function buildGate(request: ApiRequest, buildToken: string): TokenGate {
  return {
    upfront: buildTokenOf(request),
    check: (token) => (token === buildToken ? undefined : errorReply(403)),
  };
}

function nonEmpty(value: string | null): string | undefined {
  return value === null || value === '' ? undefined : value;
}

/** The build token: a `token` parameter wins over the `BUILD-TOKEN` header (§3, §12 item 6). */
export function buildTokenOf(request: ApiRequest, params: Params = {}): string | undefined {
  const param = params.token ?? request.query.get('token');
  if (typeof param === 'string' && param !== '') return param;
  const header = request.req.headers['build-token'];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === '' ? undefined : value;
}
