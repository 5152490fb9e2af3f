import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Masker, MASK } from '../../src/trace/mask.js';
import { withSecretLines } from '../../src/trace/secrets.js';

function maskInPieces(secrets: string[], input: Buffer, cuts: number[], tokenPrefixes: string[] = []): string {
  const masker = new Masker(secrets, { tokenPrefixes });
  const points = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let previous = 0;
  for (const point of [...points, input.length]) {
    parts.push(Buffer.from(masker.push(input.subarray(previous, point))));
    previous = point;
  }
  parts.push(masker.end());
  return Buffer.concat(parts).toString();
}

/** Straightforward whole-text masking with the same rule: earliest match, longest at a position. */
function referenceMask(secrets: string[], text: string): string {
  const sorted = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  let out = '';
  let i = 0;
  while (i < text.length) {
    const hit = sorted.find((secret) => text.startsWith(secret, i));
    if (hit) {
      out += MASK;
      i += hit.length;
    } else {
      out += text[i];
      i++;
    }
  }
  return out;
}

const TOKEN = /^[-.0-9A-Za-z_=]$/;

/** The same rule with token prefixes: a prefix stays and the token after it becomes one [MASKED]. */
function referenceMaskTokens(secrets: string[], prefixes: string[], text: string): string {
  const patterns = [...new Set(secrets.filter((s) => s.length > 0))].map((text) => ({ text, prefix: false }));
  patterns.push(...[...new Set(prefixes.filter((s) => s.length > 0))].map((text) => ({ text, prefix: true })));
  patterns.sort((a, b) => b.text.length - a.text.length);
  let out = '';
  let i = 0;
  while (i < text.length) {
    const hit = patterns.find((p) => text.startsWith(p.text, i));
    if (!hit) {
      out += text[i];
      i += 1;
    } else if (!hit.prefix) {
      out += MASK;
      i += hit.text.length;
    } else {
      out += hit.text;
      i += hit.text.length;
      let j = i;
      while (j < text.length && TOKEN.test(text[j] as string)) j += 1;
      if (j > i) out += MASK;
      i = j;
    }
  }
  return out;
}

describe('Masker', () => {
  it('replaces every occurrence of a secret with [MASKED]', () => {
    const output = maskInPieces(['hunter2'], Buffer.from('pw=hunter2; again hunter2!'), []);
    expect(output).toBe('pw=[MASKED]; again [MASKED]!');
  });

  it('masks a secret that is split across writes', () => {
    const input = Buffer.from('token: s3cr3t-value end');
    for (let cut = 0; cut <= input.length; cut++) {
      expect(maskInPieces(['s3cr3t-value'], input, [cut])).toBe('token: [MASKED] end');
    }
  });

  it('prefers the longest secret starting at the same position', () => {
    expect(maskInPieces(['abc', 'abcdef'], Buffer.from('xabcdefx abcx'), [3])).toBe('x[MASKED]x [MASKED]x');
  });

  it('holds back only a tail that could still become a secret', () => {
    const masker = new Masker(['12345']);
    expect(masker.push(Buffer.from('abcdefgh')).toString()).toBe('abcdefgh');
    expect(masker.push(Buffer.from('abc123')).toString()).toBe('abc');
    expect(masker.push(Buffer.from('4')).toString()).toBe('');
    expect(masker.push(Buffer.from('x')).toString()).toBe('1234x');
    expect(masker.push(Buffer.from('x1')).toString()).toBe('x');
    expect(masker.end().toString()).toBe('1');
  });

  it('passes output through untouched when there is nothing to mask', () => {
    const masker = new Masker([]);
    const chunk = Buffer.from('plain');
    expect(masker.push(chunk)).toBe(chunk);
  });

  it('masks one printed line of a multi-line secret, at every chunk boundary, with LF or CRLF endings', () => {
    const key = '-----BEGIN KEY-----\nMIIEpAIBAAKCAQEAxyz\nq9YtR2vL7mK4xN8b\nab\n-----END KEY-----\n';
    const secrets = withSecretLines([key]);
    const output = Buffer.from(
      'line two: MIIEpAIBAAKCAQEAxyz\r\n' + // one line, CRLF after it
        key.replaceAll('\n', '\r\n') + // the whole key through a terminal: CRLF everywhere
        key + // the whole key as it is
        'short: ab\n', // a line below the minimum length stays readable
    );
    const expected =
      'line two: [MASKED]\r\n' +
      '[MASKED]\r\n[MASKED]\r\n[MASKED]\r\nab\r\n[MASKED]\r\n' +
      '[MASKED]\n' +
      'short: ab\n';
    for (let a = 0; a <= output.length; a++) {
      expect(maskInPieces(secrets, output, [a]), `cut at ${a}`).toBe(expected);
      expect(maskInPieces(secrets, output, [a, a + 5, a + 17])).toBe(expected);
    }
    // One byte at a time.
    expect(maskInPieces(secrets, output, Array.from({ length: output.length }, (_, i) => i))).toBe(expected);
  });

  it('masks multi-line secrets and their lines the same way however the output is split (property)', () => {
    const alphabet = fc.constantFrom('a', 'b', 'é', '\n', '\r', 'x', ' ');
    const text = (max: number) => fc.array(alphabet, { minLength: 1, maxLength: max }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(fc.array(text(12), { minLength: 1, maxLength: 3 }), fc.array(text(8), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 12 }), (values, pieces, cuts) => {
        const secrets = withSecretLines(values).filter((secret) => secret.length > 0);
        // Output made of the secrets, their lines and noise.
        const output = pieces.map((piece, i) => (i % 3 === 1 ? (secrets[i % secrets.length] ?? piece) : piece)).join('');
        const input = Buffer.from(output);
        const expected = referenceMask(secrets, output);
        expect(maskInPieces(secrets, input, [])).toBe(expected);
        expect(maskInPieces(secrets, input, cuts)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives identical masked traces for random splits of the same output (property)', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', 'é', '\n', 'x');
    const word = fc.array(alphabet, { minLength: 1, maxLength: 6 }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(
        fc.array(word, { minLength: 1, maxLength: 4 }),
        fc.array(fc.oneof(word, fc.constant('')), { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (secrets, pieces, cutsA, cutsB) => {
          // Build output that contains the secrets (and fragments of them) often.
          const text = pieces.map((piece, i) => (i % 2 === 0 ? piece : (secrets[i % secrets.length] ?? piece))).join('');
          const input = Buffer.from(text);
          const whole = maskInPieces(secrets, input, []);
          expect(maskInPieces(secrets, input, cutsA)).toBe(whole);
          expect(maskInPieces(secrets, input, cutsB)).toBe(whole);
          expect(whole).toBe(referenceMask(secrets, text));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('masks a long repetitive secret printed in small pieces, holding back less than its length', () => {
    const secret = 'a'.repeat(64 * 1024);
    const masker = new Masker([`${secret}b`, 'aaa']);
    let out = 0;
    const piece = Buffer.from('a'.repeat(1000));
    for (let i = 0; i < 300; i++) {
      out += masker.push(piece).length;
      expect(1000 * (i + 1) - out * 3 / MASK.length).toBeLessThanOrEqual(secret.length + 3);
    }
    expect(masker.end().toString()).toMatch(/^(\[MASKED\])+$/);
  });
});

describe('Masker with token prefixes', () => {
  it('keeps the prefix and masks the token after it, whatever the chunks', () => {
    const input = Buffer.from('push with glpat-AbC_123.x=y- done, glpat- alone, glpat-\n');
    const expected = 'push with glpat-[MASKED] done, glpat- alone, glpat-\n';
    for (let a = 0; a <= input.length; a++) {
      expect(maskInPieces([], input, [a], ['glpat-']), `cut at ${a}`).toBe(expected);
      expect(maskInPieces([], input, [a, a + 3, a + 9], ['glpat-'])).toBe(expected);
    }
    expect(maskInPieces([], input, Array.from({ length: input.length }, (_, i) => i), ['glpat-'])).toBe(expected);
  });

  it('takes a prefix literally: regular expression characters are only characters', () => {
    expect(maskInPieces([], Buffer.from('a.*b-xyz ab-xyz (x|y)+tok'), [], ['a.*b-', '(x|y)+'])).toBe('a.*b-[MASKED] ab-xyz (x|y)+[MASKED]');
  });

  it('masks secrets and tokens the same way however the output is split (property)', () => {
    const alphabet = fc.constantFrom('g', 'l', 'p', '-', 'a', '1', ' ', '\n', '=', '.', 'é', '[');
    const word = (max: number) => fc.array(alphabet, { minLength: 1, maxLength: max }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(fc.array(word(6), { maxLength: 3 }), fc.array(word(4), { minLength: 1, maxLength: 3 }), fc.array(word(6), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 12 }), (secrets, prefixes, pieces, cuts) => {
        const patterns = [...secrets, ...prefixes];
        const output = pieces.map((piece, i) => (i % 2 === 1 ? `${patterns[i % patterns.length] ?? ''}${piece}` : piece)).join('');
        const input = Buffer.from(output);
        const expected = referenceMaskTokens(secrets, prefixes, output);
        expect(maskInPieces(secrets, input, [], prefixes)).toBe(expected);
        expect(maskInPieces(secrets, input, cuts, prefixes)).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
