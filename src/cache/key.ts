/**
 * Cache keys as GitLab Runner 19 reads them (`cache/cachekey`, `shells/abstract.go`): the job's key
 * expanded with its variables, `<job name>/<ref>` when the job gives none, then sanitised: `%2F`
 * and `%2E` decoded, `\` made `/`, `.` and `..` resolved inside a virtual root (so a key can never
 * climb out of the project's part of the store or of the cache dir), trailing white space cut from
 * the last segments. A key may hold `/`: it is a path below the project, locally and in the store.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';

export type CacheKeyResult = { key: string; warning?: string } | { error: string; warning?: string };

const DECODE = /%2f|%2e|\\/gi;

/** GitLab Runner's `cachekey.Sanitize` with its warning: the sanitised key, or why there is none. */
export function sanitizeCacheKey(raw: string): CacheKeyResult {
  if (raw === '') return { error: 'empty cache key' };
  const normalised = raw.replace(DECODE, (match) => (match === '\\' || match.toLowerCase() === '%2f' ? '/' : '.'));
  const parts: string[] = [];
  for (const part of normalised.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  while (parts.length > 0) {
    const last = parts[parts.length - 1]!.replace(/\s+$/u, '');
    if (last !== '') {
      parts[parts.length - 1] = last;
      break;
    }
    parts.pop();
  }
  const key = parts.join('/');
  if (key === '') return { error: 'empty cache key', warning: `cache key ${JSON.stringify(raw)} could not be sanitized` };
  return key === raw ? { key } : { key, warning: `cache key ${JSON.stringify(raw)} sanitized to ${JSON.stringify(key)}` };
}

/** How a key is stored: the name of its local directory and store object, and whether the object name is sharded. */
export interface StoredKey {
  name: string;
  /** `<project>/<first two hex digits>/<name>` in the store (hashed keys spread over 256 prefixes). */
  sharded: boolean;
}

/**
 * Where `key` is kept, as GitLab Runner 19 names it: under the key itself, or with FF_HASH_CACHE_KEYS
 * under its SHA-256 in hex, sharded in the store by the hash's first two hex digits.
 */
export function storedKey(key: string, hashed: boolean): StoredKey {
  return hashed ? { name: createHash('sha256').update(key).digest('hex'), sharded: true } : { name: key, sharded: false };
}

/**
 * The key under the other FF_HASH_CACHE_KEYS naming (GitLab Runner's alternate name, so caches survive
 * the flag turned on or off). A hashed key is not sanitised: its unhashed name is only offered when
 * sanitising would leave it as it is, so it cannot point at another project's cache.
 */
export function alternateKey(key: string, hashed: boolean): StoredKey | undefined {
  if (!hashed) return storedKey(key, true);
  const plain = sanitizeCacheKey(key);
  return 'key' in plain && plain.key === key ? storedKey(key, false) : undefined;
}

/** The key GitLab Runner uses when a job's cache has none: `<job name>/<ref>`, joined and cleaned as a path. */
export function defaultCacheKey(jobName: string, ref: string): string {
  return posix.join('/', jobName, ref).slice(1);
}

/**
 * Whether `CACHE_FALLBACK_KEY` may be used: GitLab Runner refuses one ending in `-protected`
 * (trailing dots and spaces aside), so an unprotected branch cannot read a protected branch's cache.
 */
export function fallbackKeyAllowed(key: string): boolean {
  return !key.replace(/[. ]+$/, '').endsWith('-protected');
}
