/**
 * The token prefixes masked in a job's trace (mask.ts keeps the prefix and masks the token after
 * it), as GitLab Runner 19 chooses them: the coordinator's `features.token_mask_prefixes` (v4) and
 * GitLab's own — `glpat-` always, and with `FF_MASK_ALL_DEFAULT_TOKENS` (on unless a job variable
 * turns it off) every prefix of GitLab's token overview. Each is trimmed; the list is sorted by
 * length (then text), duplicates and empty ones dropped, and only the first 15 are used, as GitLab
 * Runner does (and none longer than MAX_TOKEN_PREFIX_LENGTH). Prefixes are literal text, never patterns.
 */
import type { BuildPayload } from '../protocol/types.js';
import { parseGoBool } from '../util/go-bool.js';

/** GitLab Runner's `tokensanitizer` list (https://docs.gitlab.com/security/token_overview/#token-prefixes). */
export const ALWAYS_MASKED_PREFIXES = ['glpat-'] as const;
export const DEFAULT_TOKEN_PREFIXES = [
  'gloas-', 'gldt-', 'glrt-', 'glcbt-', 'glrtr-', 'glptt-', 'glft-', 'glimt-', 'glagent-', 'glsoat-', 'glffct-', '_gitlab_session=', 'gltok-',
] as const;

/** The feature flag that adds DEFAULT_TOKEN_PREFIXES (default on in GitLab Runner 19). */
export const MASK_ALL_DEFAULT_TOKENS = 'FF_MASK_ALL_DEFAULT_TOKENS';

/** GitLab Runner uses this many prefixes at most, the shortest. */
export const MAX_TOKEN_PREFIXES = 15;

/** A longer text is no token's prefix (GitLab's own are at most 20 characters); it is left out, not searched for. */
export const MAX_TOKEN_PREFIX_LENGTH = 256;

export interface TokenPrefixes {
  prefixes: string[];
  /** Prefixes the coordinator sent that are not used (beyond the first 15, or too long), for a warning. */
  leftOut: string[];
}

/**
 * `maskAll`: the job's FF_MASK_ALL_DEFAULT_TOKENS as the runner resolved it (its `[runners.feature_flags]`
 * first); without it, the job's own variable says, on by default.
 */
export function tokenPrefixes(build: Pick<BuildPayload, 'token_mask_prefixes' | 'variables'>, maskAll?: boolean): TokenPrefixes {
  const flag = build.variables.findLast((v) => v.key === MASK_ALL_DEFAULT_TOKENS)?.value;
  const all = [...(build.token_mask_prefixes ?? []), ...ALWAYS_MASKED_PREFIXES, ...(maskAll ?? parseGoBool(flag) ?? true ? DEFAULT_TOKEN_PREFIXES : [])];
  const sorted = [...new Set(all.map((prefix) => prefix.trim()).filter((prefix) => prefix !== ''))].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  const usable = sorted.filter((prefix) => prefix.length <= MAX_TOKEN_PREFIX_LENGTH);
  return { prefixes: usable.slice(0, MAX_TOKEN_PREFIXES), leftOut: [...usable.slice(MAX_TOKEN_PREFIXES), ...sorted.filter((prefix) => prefix.length > MAX_TOKEN_PREFIX_LENGTH)] };
}
