/**
 * Token minting (docs/protocol-v1.md §11.2). Runner tokens are 30 hex characters and unique in their first 8
 * (the runner names directories after the prefix); build and registration tokens are 20 URL-safe
 * characters.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { shortToken } from '../util/short-token.js';

const URL_SAFE = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A random string of `length` URL-safe characters. */
export function randomToken(length = 20): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += URL_SAFE[byte % URL_SAFE.length];
  return out;
}

/** The prefix of server-created runner authentication tokens (API v4, docs/protocol-v4.md §2). */
export const CREATED_RUNNER_PREFIX = 'glrt-';

/** What runners name a runner's directories and caches after (GitLab Runner 19's 9 characters, util/short-token.ts). */
export { shortToken };

/**
 * A runner token whose short form and first 8 characters are not in `taken` (both forms of every
 * existing token): 30 hex characters (the legacy kind, from a
 * registration token), or `glrt-` and 20 URL-safe characters for a runner created on the server.
 * The first 8 characters are unique too, for runners before GitLab Runner 19 (their directories).
 */
export function runnerToken(taken: ReadonlySet<string>, created = false): string {
  for (;;) {
    const token = created ? `${CREATED_RUNNER_PREFIX}${randomToken(20)}` : randomBytes(15).toString('hex');
    if (!taken.has(shortToken(token)) && !taken.has(token.slice(0, 8))) return token;
  }
}

/** An opaque queue value for the `last_update` short-circuit (§4.4.1). */
export function queueValue(): string {
  return randomBytes(16).toString('hex');
}

/** Constant-time comparison of two strings of any lengths (the admin token, the web page's cookie and CSRF token). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHmac('sha256', 'compare').update(given).digest();
  const b = createHmac('sha256', 'compare').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}
