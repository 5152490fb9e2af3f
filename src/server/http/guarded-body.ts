/**
 * Reading a request body only as far as its sender is trusted (docs/protocol-v1.md §2.3), so a client
 * without a valid token cannot make the server buffer large bodies. A token from the
 * query string or a header is checked before any body byte is read. When the token can only be in
 * the body (legacy clients send it in JSON or a form, docs/protocol-v1.md §2.3), at most `PRE_AUTH_LIMIT`
 * bytes are read while it is looked for, from a small pool shared by all such requests; once the
 * token is accepted the rest of the body is read under the route's cap, from the main pool. Every
 * buffered byte is reserved in a pool first and given back when the request ends, so concurrent
 * requests cannot multiply memory past the pools.
 */
import type { IncomingMessage } from 'node:http';
import type { ByteBudget, Reservation } from './byte-budget.js';
import { BodyCollector, declaredLength } from './collect.js';
import { errorReply, HttpError, type Reply } from './reply.js';
import { createTokenSniffer } from './token-sniffer.js';

/** How much of a body may be read before its token is known: far more than `info` + `token`. */
export const PRE_AUTH_LIMIT = 64 * 1024;

export interface BodyPools {
  /** Bodies of requests whose token was accepted. */
  readonly main: ByteBudget;
  /** The first bytes of bodies whose token is still unknown. */
  readonly preAuth: ByteBudget;
}

export interface TokenGate {
  /** The token the query string or a header carries, if any. */
  upfront: string | undefined;
  /** Undefined accepts `token`; a reply refuses the request with it. */
  check(token: string): Reply | undefined;
}

export type GuardedBody = { ok: true; body: Buffer } | { ok: false; reply: Reply };

/** Refused before a byte of a big body is buffered: 413 when the declared length is over `limit`. */
function refuseDeclared(req: IncomingMessage, limit: number): void {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) throw new HttpError(413);
}

/** Reserves the bytes a body may need (until the request ends) and reads it whole; 413 past `limit`. */
export async function readBudgetedBody(req: IncomingMessage, limit: number, pool: ByteBudget, signal: AbortSignal): Promise<Buffer> {
  refuseDeclared(req, limit);
  const reservation = await reserve(pool, Math.min(declaredLength(req) ?? limit, limit), signal);
  const collector = new BodyCollector(req);
  if ((await collector.readUntil(limit, signal)) === 'over') throw new HttpError(413);
  reservation.shrinkTo(collector.size);
  return collector.take();
}

/**
 * Reserves `bytes` in `pool` for as long as the request lives (`signal` aborts when it ends): the
 * body, and what is parsed from it, are in use until the reply is written.
 */
async function reserve(pool: ByteBudget, bytes: number, signal: AbortSignal): Promise<Reservation> {
  const reservation = await pool.acquire(bytes, signal);
  if (signal.aborted) reservation.release();
  else signal.addEventListener('abort', () => reservation.release(), { once: true });
  return reservation;
}

/**
 * Reads the body of a request that must carry a valid token in the query, a header or the body.
 * Resolves `{ ok: false }` with the gate's refusal (or a 403 naming where the token goes) as soon as
 * the request is known to be unauthenticated; the unread rest of the body is left to the dispatcher
 * to discard or cut. A body that ends within the pre-auth window is returned whatever its token, so
 * the handler answers it exactly as it always did (400 for a missing token, 403 for a wrong one).
 */
export async function readGuardedBody(req: IncomingMessage, limit: number, pools: BodyPools, gate: TokenGate, signal: AbortSignal): Promise<GuardedBody> {
  let refusal: Reply | undefined;
  if (gate.upfront !== undefined) {
    refusal = gate.check(gate.upfront);
    if (refusal === undefined) return { ok: true, body: await readBudgetedBody(req, limit, pools.main, signal) };
  }
  refuseDeclared(req, limit);
  const declared = declaredLength(req);
  const preAuth = await pools.preAuth.acquire(Math.min(declared ?? PRE_AUTH_LIMIT, PRE_AUTH_LIMIT), signal);
  try {
    const collector = new BodyCollector(req);
    const sniffer = createTokenSniffer(req);
    let token: string | undefined;
    const outcome = await collector.readUntil(PRE_AUTH_LIMIT, signal, (chunk) => {
      token = sniffer?.feed(chunk);
      return token !== undefined;
    });
    if (outcome === 'ended') return { ok: true, body: collector.take() };
    if (token === undefined) {
      return { ok: false, reply: refusal ?? errorReply(403, `403 Forbidden - no token in the query string or in the first ${PRE_AUTH_LIMIT / 1024} KiB of the body; send "token" before large fields`) };
    }
    const refused = gate.check(token);
    if (refused) return { ok: false, reply: refused };
    const reservation = await reserve(pools.main, Math.min(declared ?? limit, limit), signal);
    if ((await collector.readUntil(limit, signal)) === 'over') throw new HttpError(413);
    reservation.shrinkTo(collector.size);
    return { ok: true, body: collector.take() };
  } finally {
    preAuth.release();
  }
}
