/** GitLab's expansions of variable references (src/pipeline/variables-expand.ts). */
import { describe, expect, it } from 'vitest';
import { expandAmongThemselves, expandReferences, expandVariables } from '../../src/pipeline/variables-expand.js';

describe('expandVariables (include paths, changes, exists)', () => {
  it('expands $X and ${X}, empties unknown ones and turns $$ into $', () => {
    expect(expandVariables('$A/${B}/$C/$$A', { A: 'a', B: 'b' })).toBe('a/b//$A');
  });
});

describe('expandReferences (ExpandVariables.expand)', () => {
  it('expands $X, ${X} and %X%, and empties unknown ones; $$ is not an escape', () => {
    expect(expandReferences('$A-${A}-%A%-$NONE-%NONE%-$$A', { A: 'x' })).toBe('x-x-x---$x');
  });
});

describe('expandAmongThemselves (Collection#sort_and_expand_all)', () => {
  it('expands values with the others, in any order, the last of a name winning; raw ones and escapes stay', () => {
    const expanded = expandAmongThemselves([
      { key: 'URL', value: 'https://$HOST:%PORT%/${PATH_PART}' },
      { key: 'HOST', value: 'old' },
      { key: 'HOST', value: '$DOMAIN' },
      { key: 'DOMAIN', value: 'example.com' },
      { key: 'PORT', value: '443' },
      { key: 'RAW', value: '$HOST', raw: true },
      { key: 'ESCAPED', value: '$$HOST %%PORT $MISSING' },
    ]);
    expect(expanded).toEqual({ URL: 'https://example.com:443/', HOST: 'example.com', DOMAIN: 'example.com', PORT: '443', RAW: '$HOST', ESCAPED: '$$HOST %%PORT ' });
  });

  it('leaves every value as written when references go round in a cycle, as GitLab does', () => {
    expect(expandAmongThemselves([{ key: 'A', value: '$B' }, { key: 'B', value: 'x$A' }, { key: 'C', value: '$D' }, { key: 'D', value: 'd' }])).toEqual({ A: '$B', B: 'x$A', C: '$D', D: 'd' });
  });
});
