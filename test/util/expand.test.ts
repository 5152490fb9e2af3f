import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandString } from '../../src/util/expand.js';
import { trimEndChar, trimStartChar } from '../../src/util/text.js';

/** The regular expression the expansion was written with before, kept as the reference of what it does. */
function referenceExpand(text: string, lookup: (name: string) => string): string {
  return text.replace(/\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|([0-9*#?@!-]))/g, (_m, dollar: string | undefined, braced: string | undefined, bare: string | undefined) => {
    if (dollar) return '$';
    const name = braced ?? bare;
    return name && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? lookup(name) : '';
  });
}

const lookup = (name: string): string => `<${name}>`;

describe('expandString', () => {
  it('expands $NAME and ${NAME}, empties unknown forms and specials, keeps a lone $ (property, against the regular expression it replaces)', () => {
    const piece = fc.constantFrom('$', '{', '}', 'a', 'B', '_', '1', '*', '?', ' ', '-', '$$', '${', '}$', 'é');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }).map((pieces) => pieces.join('')), (text) => {
        expect(expandString(text, lookup)).toBe(referenceExpand(text, lookup));
      }),
      { numRuns: 20_000 },
    );
  });

  it('takes one pass over a megabyte of unclosed ${ (a regular expression retried at each)', () => {
    const text = '${'.repeat(512 * 1024);
    let looked = 0;
    expect(expandString(text, (name) => `${(looked += 1)}${name}`)).toBe(text);
    expect(looked).toBe(0);
  });
});

describe('trimming a repeated character', () => {
  it('trims only the ends', () => {
    expect(trimEndChar('//a//b///', '/')).toBe('//a//b');
    expect(trimStartChar('//a//b///', '/')).toBe('a//b///');
    expect(trimEndChar('///', '/')).toBe('');
    expect(trimStartChar('', '/')).toBe('');
  });
});
