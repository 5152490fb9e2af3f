/**
 * Token minting (docs/protocol-v1.md §11.2). Runner tokens are 30 hex characters and unique in their first 8
 * (the runner names directories after the prefix); build and registration tokens are 20 URL-safe
 * characters.
 */
import { randomBytes } from 'node:crypto';

const URL_SAFE = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A random string of `length` URL-safe characters. */
export function randomToken(length = 20): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += URL_SAFE[byte % URL_SAFE.length];
  return out;
}

/** A 30-hex-character runner token whose 8-character prefix is not in `takenPrefixes`. */
export function runnerToken(takenPrefixes: ReadonlySet<string>): string {
  for (;;) {
    const token = randomBytes(15).toString('hex');
    if (!takenPrefixes.has(token.slice(0, 8))) return token;
  }
}

/** An opaque queue value for the `last_update` short-circuit (§4.4.1). */
export function queueValue(): string {
  return randomBytes(16).toString('hex');
}
