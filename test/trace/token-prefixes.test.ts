import { describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN_PREFIXES, tokenPrefixes } from '../../src/trace/token-prefixes.js';

const job = (prefixes: string[] | undefined, flag?: string) => ({
  ...(prefixes ? { token_mask_prefixes: prefixes } : {}),
  variables: flag === undefined ? [] : [{ key: 'FF_MASK_ALL_DEFAULT_TOKENS', value: flag, public: true }],
});

describe('token prefixes', () => {
  it('are glpat- and GitLab\'s defaults when the coordinator sends none, the shortest first', () => {
    const { prefixes, leftOut } = tokenPrefixes(job(undefined));
    expect(prefixes).toEqual(['gldt-', 'glft-', 'glrt-', 'glcbt-', 'glimt-', 'gloas-', 'glpat-', 'glptt-', 'glrtr-', 'gltok-', 'glffct-', 'glsoat-', 'glagent-', '_gitlab_session=']);
    expect(prefixes).toHaveLength(DEFAULT_TOKEN_PREFIXES.length + 1);
    expect(leftOut).toEqual([]);
  });

  it('are glpat- alone, with the coordinator\'s, when the job turns FF_MASK_ALL_DEFAULT_TOKENS off (Go\'s boolean words)', () => {
    for (const off of ['false', '0', 'F', 'FALSE']) expect(tokenPrefixes(job([' myco_ '], off)).prefixes).toEqual(['myco_', 'glpat-']);
    // Anything else leaves the flag at its default, on.
    expect(tokenPrefixes(job([], 'no')).prefixes).toHaveLength(14);
  });

  it('keep the 15 shortest, trimmed and each once, and leave out any longer than 256 characters', () => {
    const many = Array.from({ length: 20 }, (_, i) => `p${String(i).padStart(2, '0')}_`);
    const { prefixes, leftOut } = tokenPrefixes(job([...many, 'p00_', '   ', 'x'.repeat(257)], 'false'));
    expect(prefixes).toEqual(many.slice(0, 15));
    expect(leftOut).toEqual([...many.slice(15), 'glpat-', 'x'.repeat(257)]);
  });
});
