/**
 * What one of a job's caches asks for, read as GitLab Runner 19 reads it (`shells/abstract.go`,
 * `common/build_settings.go`): its key (expanded with the job's variables; `<job name>/<ref>` when
 * empty; sanitised), its fallback keys (`fallback_keys`, then `CACHE_FALLBACK_KEY` unless it ends in
 * `-protected`), its `policy` (expanded too, so `policy: $CACHE_POLICY` works), and the job's
 * `CACHE_REQUEST_TIMEOUT` (minutes, default 10), `CACHE_COMPRESSION_LEVEL` and
 * `CACHE_COMPRESSION_FORMAT`. Problems are lines for the job log, as GitLab Runner prints them.
 */
import type { BuildPayload, CacheOptions } from '../protocol/types.js';
import { expandString } from '../util/expand.js';
import { parseGoBool } from '../util/go-bool.js';
import { CacheError } from './errors.js';
import { defaultCacheKey, fallbackKeyAllowed, sanitizeCacheKey, type CacheKeyResult } from './key.js';

export type CachePolicy = 'pull' | 'push' | 'pull-push';

/** The job's variables: the value of `name` (its last definition, expanded), or undefined. */
export type VariableLookup = (name: string) => string | undefined;

export interface CachePlan {
  /** The sanitised key (as expanded, with FF_HASH_CACHE_KEYS); the object and the local archive are named after it. */
  key: string;
  /** Keys tried in order when `key` has no cache. */
  fallbackKeys: string[];
  policy: CachePolicy;
  /** FF_HASH_CACHE_KEYS as the job resolved it: keys are stored under their hash (key.ts `storedKey`). */
  hashed: boolean;
}

export interface CacheSettings {
  /** CACHE_REQUEST_TIMEOUT in milliseconds: the whole of one request to the store. */
  requestTimeoutMs: number;
  /** The zip's deflate level (0: stored); undefined: zlib's default. */
  compressionLevel?: number;
}

/** GitLab Runner's default CACHE_REQUEST_TIMEOUT, in minutes. */
export const DEFAULT_REQUEST_TIMEOUT_MINUTES = 10;

/** CACHE_COMPRESSION_LEVEL's names and the deflate level each is here (GitLab Runner's fastzip levels; `default` is zlib's). */
const COMPRESSION_LEVELS: Record<string, number | undefined> = { fastest: 0, fast: 1, default: undefined, slow: 7, slowest: 9 };

/**
 * The plan for `spec`, or undefined when the cache is skipped (no key left: the lines say why).
 * Throws CACHE_POLICY_UNKNOWN for a policy that is none of GitLab's, as GitLab Runner fails the job.
 */
export function planCache(build: BuildPayload, spec: CacheOptions, variable: VariableLookup, log: (line: string) => void, doing: 'extraction' | 'archiving'): CachePlan | undefined {
  const expand = (text: string): string => expandString(text, (name) => variable(name) ?? '');
  // As GitLab Runner: a key that is hashed needs no sanitising (its hash is what names files and objects).
  const hashed = parseGoBool(variable('FF_HASH_CACHE_KEYS') ?? '') === true;
  const sanitised = (raw: string, allowed?: (key: string) => boolean): string | undefined => {
    const result: CacheKeyResult = hashed ? (raw === '' ? { error: 'empty cache key' } : { key: raw }) : sanitizeCacheKey(raw);
    if (result.warning) log(`WARNING: ${result.warning}`);
    if ('error' in result) {
      log(`Skipping cache ${doing} due to ${result.error}`);
      return undefined;
    }
    return allowed && !allowed(result.key) ? undefined : result.key;
  };
  const key = sanitised(spec.key ? expand(spec.key) : defaultCacheKey(build.name, build.ref));
  if (key === undefined) return undefined;
  const policy = expand(spec.policy ?? '') || 'pull-push';
  if (policy !== 'pull' && policy !== 'push' && policy !== 'pull-push') {
    throw new CacheError('CACHE_POLICY_UNKNOWN', `unknown cache policy ${policy} for ${key}`);
  }
  const fallbackKeys: string[] = [];
  const add = (found: string | undefined): void => {
    if (found !== undefined && found !== key && !fallbackKeys.includes(found)) fallbackKeys.push(found);
  };
  for (const raw of spec.fallback_keys ?? []) if (raw !== '') add(sanitised(expand(raw)));
  const fallback = variable('CACHE_FALLBACK_KEY') ?? '';
  if (fallback !== '') {
    add(sanitised(fallback, (candidate) => {
      if (fallbackKeyAllowed(candidate)) return true;
      log(`WARNING: CACHE_FALLBACK_KEY ${JSON.stringify(candidate)} not allowed to end in "-protected"`);
      return false;
    }));
  }
  return { key, fallbackKeys, policy, hashed };
}

/** The job's cache settings from its variables; a value that cannot be used is a warning and the default. */
export function cacheSettings(variable: VariableLookup, log: (line: string) => void): CacheSettings {
  let minutes = DEFAULT_REQUEST_TIMEOUT_MINUTES;
  const timeout = variable('CACHE_REQUEST_TIMEOUT')?.trim();
  if (timeout) {
    if (/^-?\d+$/.test(timeout)) minutes = Number(timeout) > 0 ? Number(timeout) : DEFAULT_REQUEST_TIMEOUT_MINUTES;
    else log(`WARNING: CACHE_REQUEST_TIMEOUT: expected int got ${JSON.stringify(timeout)}, using default value: ${DEFAULT_REQUEST_TIMEOUT_MINUTES}`);
  }
  const settings: CacheSettings = { requestTimeoutMs: minutes * 60_000 };
  const level = variable('CACHE_COMPRESSION_LEVEL') ?? '';
  if (level !== '' && !(level in COMPRESSION_LEVELS)) log(`WARNING: compression level ${JSON.stringify(level)} is invalid, falling back to default`);
  const deflate = COMPRESSION_LEVELS[level];
  if (deflate !== undefined) settings.compressionLevel = deflate;
  const format = (variable('CACHE_COMPRESSION_FORMAT') ?? '').toLowerCase();
  if (format !== '' && format !== 'zip') log(`WARNING: CACHE_COMPRESSION_FORMAT ${JSON.stringify(format)} is not supported by ci-runner; the cache is written as zip`);
  return settings;
}
