/**
 * The globs of artifacts and cache paths (doublestar's semantics, as GitLab Runner): the usual
 * patterns match as a glob library matches them, and a pattern made to be slow is not.
 */
import fc from 'fast-check';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { globBase, GlobError, globMatcher, isGlob } from '../../src/artifacts/glob.js';

const PATHS = ['a.log', 'logs/b.log', 'logs/deep/.c.log', 'reports/x.xml', 'reports/sub/y.xml', 'out', 'out/a.txt', 'out/logs', 'out/logs/b.log', 'x.tmp', '.hidden.tmp', 'dir', 'dir/file', 'a[b].txt', 'ab.txt'];

describe('globs of artifacts and cache paths', () => {
  it('match the common patterns as picomatch does', () => {
    const patterns = ['**/*.log', 'reports/*.xml', 'reports/**/*.xml', 'out/**', '**', '*', '*.tmp', '**/*.tmp', 'out/logs', 'dir/**', 'logs/?.log', '[ab].log', 'logs/**/.*.log', 'out/*/b.log', '**/deep/**'];
    for (const pattern of patterns) {
      const ours = globMatcher(pattern);
      const theirs = picomatch(pattern, { dot: true });
      for (const path of PATHS) expect(ours(path), `${pattern} on ${path}`).toBe(theirs(path));
    }
  });

  it('take braces, escapes and classes as doublestar does', () => {
    expect(PATHS.filter(globMatcher('{reports,logs}/*.{xml,log}'))).toEqual(['logs/b.log', 'reports/x.xml']);
    expect(PATHS.filter(globMatcher('a\\[b].txt'))).toEqual(['a[b].txt']);
    expect(PATHS.filter(globMatcher('a[b].txt'))).toEqual(['ab.txt']);
    expect(globMatcher('[a-c]x')('bx')).toBe(true);
    expect(globMatcher('[^a-c]x')('bx')).toBe(false);
    expect(PATHS.filter(globMatcher('[!b]*.log'))).toEqual(['a.log']);
    // `**` at the end takes no directory too: `*/**` is every path.
    expect(globMatcher('*/**')('a')).toBe(true);
    expect(globMatcher('{a,b{c,d}}')('bd')).toBe(true);
    expect(globMatcher('a{')('a{')).toBe(true);
  });

  it('say where a glob starts', () => {
    expect([isGlob('a/b.txt'), isGlob('a/*.txt'), isGlob('a\\*b')]).toEqual([false, true, false]);
    expect([globBase('reports/sub/*.xml'), globBase('**/x'), globBase('a/b{c,d}/e')]).toEqual(['reports/sub', '', 'a']);
  });

  it('agree with a plain recursive matcher on random patterns of *, ?, ** and literals (property)', () => {
    const segment = fc.array(fc.constantFrom('a', 'b', '.', '*', '?'), { minLength: 1, maxLength: 5 }).map((chars) => chars.join(''));
    const pattern = fc.array(fc.oneof(segment, fc.constant('**')), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
    const path = fc.array(fc.array(fc.constantFrom('a', 'b', '.'), { minLength: 1, maxLength: 5 }).map((chars) => chars.join('')), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(pattern, path, (p, text) => {
        expect(globMatcher(p)(text)).toBe(referenceMatch(p.split('/'), text.split('/')));
      }),
      { numRuns: 5000 },
    );
  });

  it('match a pattern made to be slow in one pass (a glob library takes exponential time on it)', () => {
    const name = 'a'.repeat(200);
    expect(globMatcher(`${'*a'.repeat(60)}*b`)(name)).toBe(false);
    expect(globMatcher(`${'**/'.repeat(40)}x`)(`${'d/'.repeat(200)}y`)).toBe(false);
    expect(globMatcher('+(a|aa)+(a|aa)b')(name)).toBe(false);
  });

  it('refuse a pattern whose braces write out past the bound, and a long one at once', () => {
    expect(() => globMatcher('{a,b}'.repeat(20))).toThrow(GlobError);
    expect(() => globMatcher('{'.repeat(1_000_000))).toThrow(GlobError);
    // Unmatched braces are characters, found in one pass.
    expect(globMatcher(`${'{'.repeat(4000)}a,b}`)(`${'{'.repeat(3999)}b`)).toBe(true);
  });
});

/** doublestar's rule written the obvious way (exponential, for short inputs): `**` takes any number of segments, `*` any run in one. */
function referenceMatch(pattern: string[], parts: string[]): boolean {
  if (pattern.length === 0) return parts.length === 0;
  const [head, ...rest] = pattern as [string, ...string[]];
  if (head === '**') return parts.some((_, i) => referenceMatch(rest, parts.slice(i))) || referenceMatch(rest, []);
  if (parts.length === 0) return false;
  return segmentMatch(head.replace(/\*+/g, '*'), parts[0] as string) && referenceMatch(rest, parts.slice(1));
}

function segmentMatch(pattern: string, text: string): boolean {
  if (pattern === '') return text === '';
  const c = pattern[0];
  if (c === '*') return Array.from({ length: text.length + 1 }, (_, i) => i).some((i) => segmentMatch(pattern.slice(1), text.slice(i)));
  return text !== '' && (c === '?' || c === text[0]) && segmentMatch(pattern.slice(1), text.slice(1));
}
