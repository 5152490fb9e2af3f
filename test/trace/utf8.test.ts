import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Utf8Sanitizer } from '../../src/trace/utf8.js';

/** Feeds `input` to a fresh sanitiser in pieces cut at `cuts`. */
function sanitizeInPieces(input: Uint8Array, cuts: number[]): Buffer {
  const sanitizer = new Utf8Sanitizer();
  const points = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let previous = 0;
  for (const point of [...points, input.length]) {
    parts.push(Buffer.from(sanitizer.push(input.subarray(previous, point))));
    previous = point;
  }
  parts.push(sanitizer.end());
  return Buffer.concat(parts);
}

/** What a WHATWG decoder makes of the whole input at once, re-encoded. */
function reference(input: Uint8Array): Buffer {
  return Buffer.from(new TextDecoder('utf-8').decode(input));
}

describe('Utf8Sanitizer', () => {
  it('passes valid UTF-8 through unchanged', () => {
    const text = 'héllo wörld — ✓ 😀\n';
    expect(sanitizeInPieces(Buffer.from(text), []).toString()).toBe(text);
  });

  it('keeps a multi-byte character that is split across two writes', () => {
    const bytes = Buffer.from('a😀b');
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(sanitizeInPieces(bytes, [cut]).toString()).toBe('a😀b');
    }
  });

  it('replaces invalid bytes with U+FFFD (EF BF BD)', () => {
    const input = Buffer.from([0x61, 0xff, 0x62, 0xc0, 0xaf, 0x63, 0xed, 0xa0, 0x80, 0x64]);
    const output = sanitizeInPieces(input, []);
    expect(output).toEqual(reference(input));
    expect(output.toString()).toBe('a\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffdd');
  });

  it('replaces a character left incomplete at the end of the stream', () => {
    const input = Buffer.from([0x61, 0xe2, 0x82]);
    expect(sanitizeInPieces(input, [2])).toEqual(Buffer.from('a\ufffd'));
  });

  it('gives the same result however the bytes are split (property)', () => {
    const interesting = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(0xc2, 0xe0, 0xed, 0xf0, 0xf4, 0x80, 0xbf, 0xa0, 0x8f, 0x90),
    );
    const chunky = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.array(interesting, { maxLength: 40 }).map((bytes) => Uint8Array.from(bytes)),
      fc.string({ unit: 'grapheme', maxLength: 20 }).map((text) => new Uint8Array(Buffer.from(text))),
    );
    fc.assert(
      fc.property(fc.array(chunky, { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (pieces, cuts) => {
        const input = Buffer.concat(pieces);
        const output = sanitizeInPieces(input, cuts);
        expect(output).toEqual(reference(input));
        expect(new TextDecoder('utf-8', { fatal: true }).decode(output)).toBeTypeOf('string');
      }),
      { numRuns: 2000 },
    );
  });
});
