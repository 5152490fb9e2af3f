/**
 * Who may use the web page. The admin token is typed once into the sign-in form and kept in an
 * HttpOnly, SameSite=Strict cookie, so page scripts never see it and other sites' pages never send
 * it. Every state-changing request is a POST that must also carry the CSRF token (an HMAC of the
 * admin token, so it survives restarts and changes when the admin token does) in a header that a
 * cross-site form cannot set, and an Origin, when the browser sends one, of this very server.
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { sameSecret } from '../tokens.js';

export const COOKIE_NAME = 'ci_runner_admin';
export const CSRF_HEADER = 'x-csrf-token';
/** Thirty days: "asked once" for anyone who uses the page every so often. */
const COOKIE_MAX_AGE_S = 30 * 24 * 3600;

/** The CSRF token the page sends back with every POST. */
export function csrfToken(adminToken: string): string {
  return createHmac('sha256', adminToken).update('ci-runner web page csrf v1').digest('base64url');
}

/** The value of cookie `name` in the request, if any. */
export function cookieValue(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 0 || part.slice(0, at).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** True when the request carries the admin token in the page's cookie. */
export function signedIn(req: IncomingMessage, adminToken: string): boolean {
  const value = cookieValue(req, COOKIE_NAME);
  return value !== undefined && sameSecret(value, adminToken);
}

function secure(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true;
}

/** `Set-Cookie` that signs the browser in. */
export function signInCookie(req: IncomingMessage, adminToken: string): string {
  return `${COOKIE_NAME}=${encodeURIComponent(adminToken)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_MAX_AGE_S}${secure(req) ? '; Secure' : ''}`;
}

/** `Set-Cookie` that signs the browser out. */
export function signOutCookie(req: IncomingMessage): string {
  return `${COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure(req) ? '; Secure' : ''}`;
}

/**
 * A POST from a page of another origin says so in `Origin` (every current browser sends it on
 * POST); one without Origin comes from a non-browser client, which cannot have the cookie by
 * accident.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** Why a POST is refused, or undefined when it may go on. */
export function refusePost(req: IncomingMessage, adminToken: string): { status: number; message: string } | undefined {
  if (!signedIn(req, adminToken)) return { status: 401, message: 'sign in first' };
  if (!sameOrigin(req)) return { status: 403, message: 'cross-origin request refused' };
  const header = req.headers[CSRF_HEADER];
  const given = Array.isArray(header) ? header[0] : header;
  if (given === undefined || !sameSecret(given, csrfToken(adminToken))) return { status: 403, message: 'missing or wrong CSRF token; reload the page' };
  return undefined;
}
