/**
 * The trace protocol's range headers (docs/protocol-v1.md §4.6, §7.3, §12 item 3).
 *
 * `Content-Range` on E6 is `<start>-<end>`: decimal bytes, `end` exclusive, no `bytes ` unit and no
 * `/total`. The server answers with `Range: 0-<stored length>` on 202 and 416. These are not RFC 7233
 * ranges, so no general-purpose parser is used.
 */

/** Formats the `Content-Range` value of a trace part covering bytes `[start, end)`. */
export function formatContentRange(start: number, end: number): string {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`invalid trace range ${start}-${end}`);
  }
  return `${start}-${end}`;
}

/**
 * Reads the server's length from a `Range: 0-<length>` header. Returns `undefined` when the header is
 * absent or malformed, so the caller can treat the answer as a plain failure (a 416 without `Range`
 * crashed the legacy client; ours retries instead).
 */
export function parseServerRange(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const match = /^\s*(\d+)-(\d+)\s*$/.exec(value);
  if (!match) return undefined;
  const length = Number(match[2]);
  return Number.isSafeInteger(length) ? length : undefined;
}
