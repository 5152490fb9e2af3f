import { describe, expect, it } from 'vitest';
import { cacheObjectName, defaultCacheKey, fallbackKeyAllowed, sanitizeCacheKey } from '../../src/cache/index.js';
import { shortToken } from '../../src/util/short-token.js';

describe('cache keys as GitLab Runner 19 sanitises them', () => {
  // GitLab Runner 19.3's own cases (cache/cachekey/cachekey_test.go).
  const kept: Array<[string, string]> = [
    ['fallback_key', 'fallback_key'], ['some-job/some-ref', 'some-job/some-ref'], ['.../....', '.../....'], ['...', '...'],
    ['fallback_key/', 'fallback_key'], ['fallback_key ', 'fallback_key'], ['fallback_key\\', 'fallback_key'], ['fallback_key/ \\', 'fallback_key'],
    ['fallback_key/ / \\  \\', 'fallback_key'], ['fallback_key/o', 'fallback_key/o'], ['fallback_key / \\o', 'fallback_key / /o'],
    ['\t foo bar \t\r', '\t foo bar'], [' foo / bar ', ' foo / bar'], ['foo\r', 'foo'], ['foo \t \r ', 'foo'],
    ['something %2F something', 'something / something'], ['something %2f something', 'something / something'],
    ['some%2f../job/some/ref/.', 'job/some/ref'], ['%2E%2E%2E', '...'], ['%2E%2e%2E', '...'], ['%5C', '%5C'],
    ['foo/./bar', 'foo/bar'], ['foo/blipp/../bar', 'foo/bar'], ['/foo/bar', 'foo/bar'], ['//foo/bar', 'foo/bar'], ['../foo/bar', 'foo/bar'],
    ['.../foo/bar', '.../foo/bar'], ['foo/bar/..', 'foo'], ['foo/bar/../../../.././blerp', 'blerp'], ['a/b/c/../../d', 'a/d'],
    ['job\\name/git\\ref', 'job/name/git/ref'], ['foo\\blipp\\..\\bar', 'foo/bar'], ['..\\foo\\bar', 'foo/bar'], ['foo/ /bar', 'foo/ /bar'], ['foo/ / /', 'foo'],
  ];
  it.each(kept)('%j becomes %j', (raw, key) => {
    const result = sanitizeCacheKey(raw);
    expect(result).toMatchObject({ key });
    if (key !== raw) expect(result.warning).toBe(`cache key ${JSON.stringify(raw)} sanitized to ${JSON.stringify(key)}`);
  });

  const refused = ['\\', '\\.', '/', ' ', '.', '..', ' / ', '//', '//\\', '../.', 'foo\\bar\\..\\..', 'foo/bar/../..', ' \t\r\n', '%2E', '%2E%2E', '%2e', '.%2E'];
  it.each(refused)('%j leaves no key', (raw) => {
    expect(sanitizeCacheKey(raw)).toEqual({ error: 'empty cache key', warning: `cache key ${JSON.stringify(raw)} could not be sanitized` });
  });

  it('defaults to <job name>/<ref>, cleaned as a path', () => {
    expect(defaultCacheKey('build', 'main')).toBe('build/main');
    expect(defaultCacheKey('a/../b', 'feature/x')).toBe('b/feature/x');
  });

  it('refuses a CACHE_FALLBACK_KEY ending in -protected', () => {
    expect(fallbackKeyAllowed('main-protected')).toBe(false);
    expect(fallbackKeyAllowed('main-protected. .')).toBe(false);
    expect(fallbackKeyAllowed('main-non_protected')).toBe(true);
  });
});

describe('the runner short token (GitLab Runner 19: prefixes stripped, 9 characters)', () => {
  // helpers/shorten_token_test.go at v19.3.0.
  it.each([
    ['short', 'short'], ['veryverylongtoken', 'veryveryl'], ['t1_t9Wkyj-HGRkqQ-VWTGAr', 't9Wkyj-HG'], ['t4_t9Wkyj-HGRkqQ-VWTGAr', 't4_t9Wkyj'],
    ['glrt-t9Wkyj-HGRkqQ-VWTGAr', 't9Wkyj-HG'], ['glrt-t1_t9Wkyj-HGRkqQ-VWTGAr', 't9Wkyj-HG'], ['glrtr-t1_t9Wkyj-HGRkqQ-VWTGAr', 't1_t9Wkyj'],
    ['glcbt-t2_t9Wkyj-HGRkqQ-VWTGAr', 't2_t9Wkyj'], ['GR1348941Z196cJVywzZpx_Ki_Cn2', 'Z196cJVyw'], ['GR134894-196cJVywzZpx_Ki_Cn2', 'GR134894-'],
  ])('%s → %s', (token, short) => expect(shortToken(token)).toBe(short));
});

describe('object names in the store', () => {
  const naming = { path: '', shared: false, shortToken: 'longtoken' };
  it('is [Path/][runner/<short token>/]project/<id>/<key>', () => {
    expect(cacheObjectName(naming, 10, 'key')).toBe('runner/longtoken/project/10/key');
    expect(cacheObjectName({ ...naming, path: 'whatever' }, 10, 'key')).toBe('whatever/runner/longtoken/project/10/key');
    expect(cacheObjectName({ ...naming, shared: true }, 10, 'key')).toBe('project/10/key');
    expect(cacheObjectName({ ...naming, path: '/cache/', shared: true }, 10, 'a/b')).toBe('cache/project/10/a/b');
  });

  it('never leaves the project part (GitLab Runner 19.3 cases)', () => {
    expect(cacheObjectName(naming, 10, '../10/key')).toBe('runner/longtoken/project/10/key');
    expect(cacheObjectName(naming, 10, '../10')).toBeUndefined();
    expect(cacheObjectName(naming, 10, '../10-outside')).toBeUndefined();
    expect(cacheObjectName(naming, 10, '')).toBeUndefined();
  });
});
