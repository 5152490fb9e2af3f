/**
 * UTF-8 sanitising for the trace (docs/protocol-v1.md §7.1): the trace is always valid UTF-8 and its offsets
 * are bytes. Invalid input becomes U+FFFD, one per maximal invalid subpart (the WHATWG/Unicode
 * "substitution of maximal subparts" practice, so the result equals what `TextDecoder` would give for
 * the whole input at once). A character split across two chunks is held back, never replaced.
 */
import { isUtf8 } from 'node:buffer';

const REPLACEMENT = Buffer.from([0xef, 0xbf, 0xbd]);
const EMPTY = Buffer.alloc(0);

/** Streaming sanitiser: `push` each chunk in order, then `end` once. One instance per byte stream. */
export class Utf8Sanitizer {
  /** An incomplete character at the end of the previous chunk (at most 3 bytes). */
  private pending: Buffer = EMPTY;

  /** Returns the valid UTF-8 bytes of `chunk` that are complete so far. */
  push(chunk: Uint8Array): Buffer {
    let data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.pending.length > 0) {
      data = Buffer.concat([this.pending, data]);
      this.pending = EMPTY;
    }
    // Fast path: everything but a possibly incomplete last character is valid (native check).
    const complete = completePrefixLength(data);
    if (isUtf8(data.subarray(0, complete))) {
      this.pending = Buffer.from(data.subarray(complete));
      return data.subarray(0, complete);
    }
    const { output, rest } = sanitize(data, false);
    this.pending = Buffer.from(rest);
    return output;
  }

  /** Flushes a character left incomplete at the end of the stream (as U+FFFD). */
  end(): Buffer {
    const pending = this.pending;
    this.pending = EMPTY;
    return pending.length === 0 ? EMPTY : sanitize(pending, true).output;
  }
}

/** Length of `data` without a trailing lead byte whose character is not complete yet. */
function completePrefixLength(data: Buffer): number {
  const n = data.length;
  for (let i = n - 1; i >= 0 && i >= n - 3; i--) {
    const byte = data[i] as number;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for its lead
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return n - i < needed ? i : n;
  }
  return n;
}

/**
 * Replaces invalid sequences with U+FFFD. When `final` is false, a trailing sequence that is a valid
 * prefix of a character is returned as `rest` instead (more bytes may complete it).
 */
export function sanitize(data: Buffer, final: boolean): { output: Buffer; rest: Buffer } {
  const parts: Buffer[] = [];
  const n = data.length;
  let segmentStart = 0;
  let i = 0;
  outer: while (i < n) {
    const lead = data[i] as number;
    if (lead < 0x80) {
      i++;
      continue;
    }
    let needed: number;
    let lower = 0x80;
    let upper = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) needed = 1;
    else if (lead >= 0xe0 && lead <= 0xef) {
      needed = 2;
      if (lead === 0xe0) lower = 0xa0; // overlong
      if (lead === 0xed) upper = 0x9f; // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      needed = 3;
      if (lead === 0xf0) lower = 0x90; // overlong
      if (lead === 0xf4) upper = 0x8f; // beyond U+10FFFF
    } else {
      parts.push(data.subarray(segmentStart, i), REPLACEMENT);
      i++;
      segmentStart = i;
      continue;
    }
    let j = i + 1;
    for (let k = 0; k < needed; k++, j++) {
      if (j >= n) {
        if (!final) {
          parts.push(data.subarray(segmentStart, i));
          return { output: Buffer.concat(parts), rest: data.subarray(i) };
        }
        parts.push(data.subarray(segmentStart, i), REPLACEMENT);
        i = n;
        segmentStart = n;
        continue outer;
      }
      const byte = data[j] as number;
      if (byte < (k === 0 ? lower : 0x80) || byte > (k === 0 ? upper : 0xbf)) {
        parts.push(data.subarray(segmentStart, i), REPLACEMENT);
        i = j;
        segmentStart = j;
        continue outer;
      }
    }
    i = j;
  }
  parts.push(data.subarray(segmentStart, n));
  return { output: Buffer.concat(parts), rest: EMPTY };
}
