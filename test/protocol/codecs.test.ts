import { describe, expect, it } from 'vitest';
import { apiBaseUrl } from '../../src/protocol/base-url.js';
import { formatContentRange, parseServerRange } from '../../src/protocol/content-range.js';
import { parseBuildPayload } from '../../src/protocol/build-payload.js';
import { classify } from '../../src/client/retryable.js';
import { backoffDelay } from '../../src/client/retry.js';

describe('apiBaseUrl', () => {
  it('appends /ci/api/v1/ the way the legacy client does', () => {
    expect(apiBaseUrl('https://ci.example.com/').href).toBe('https://ci.example.com/ci/api/v1/');
    expect(apiBaseUrl('https://ci.example.com').href).toBe('https://ci.example.com/ci/api/v1/');
    expect(apiBaseUrl('https://ci.example.com/ci').href).toBe('https://ci.example.com/ci/api/v1/');
    expect(apiBaseUrl('https://h/gitlab//').href).toBe('https://h/gitlab/ci/api/v1/');
  });

  it('refuses schemes other than http and https', () => {
    expect(() => apiBaseUrl('ftp://h/')).toThrow(/only http and https/);
    expect(() => apiBaseUrl('not a url')).toThrow(/invalid coordinator URL/);
  });
});

describe('trace ranges', () => {
  it('formats start-end with an exclusive end and no unit', () => {
    expect(formatContentRange(512, 1907)).toBe('512-1907');
    expect(formatContentRange(7, 7)).toBe('7-7');
    expect(() => formatContentRange(5, 4)).toThrow(RangeError);
  });

  it("reads the server's length from Range: 0-X and rejects anything else", () => {
    expect(parseServerRange('0-512')).toBe(512);
    expect(parseServerRange(['0-9'])).toBe(9);
    expect(parseServerRange(undefined)).toBeUndefined();
    expect(parseServerRange('bytes=0-5')).toBeUndefined();
    expect(parseServerRange('0-')).toBeUndefined();
  });
});

describe('parseBuildPayload', () => {
  const minimal = { id: 7, ref: 'main', sha: '0123456789abcdef', name: 'test', token: 'tok', project_id: 1, repo_url: 'http://x/a/b.git' };

  it('fills the defaults of optional fields', () => {
    const result = parseBuildPayload(minimal);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.build.options).toEqual({});
      expect(result.build.variables).toEqual([]);
      expect(result.build.timeout).toBe(0);
    }
  });

  it('keeps id and token of an invalid build so it can be reported failed', () => {
    const result = parseBuildPayload({ ...minimal, sha: 'abc', timeout: '10' });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.id).toBe(7);
      expect(result.token).toBe('tok');
      expect(result.message).toMatch(/sha/);
    }
  });

  it('skips null option values like the legacy client', () => {
    const result = parseBuildPayload({ ...minimal, options: { image: null, after_script: ['x'] } });
    expect(result.ok && result.build.options).toEqual({ after_script: ['x'] });
  });
});

describe('outcome table', () => {
  it('treats 404 on a trace PATCH as final and 5xx as retryable', () => {
    expect(classify('patchTrace', 202)).toBe('ok');
    expect(classify('patchTrace', 404)).toBe('final');
    expect(classify('patchTrace', 503)).toBe('retry');
    expect(classify('patchTrace', -1)).toBe('retry');
  });

  it('treats 401 like 403', () => {
    expect(classify('requestBuild', 401)).toBe(classify('requestBuild', 403));
    expect(classify('updateBuild', 401)).toBe('final');
  });
});

describe('backoffDelay', () => {
  it('grows exponentially up to the cap, with jitter in the upper half', () => {
    expect(backoffDelay(0, { baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(50);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 1000, random: () => 0.999 })).toBeLessThanOrEqual(800);
    expect(backoffDelay(20, { baseMs: 100, maxMs: 1000, random: () => 1 })).toBe(1000);
  });
});
