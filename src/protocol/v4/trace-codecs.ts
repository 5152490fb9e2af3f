/**
 * The v4 trace's pure codecs (docs/protocol-v4.md §7–§8): the PATCH's `Content-Range` (inclusive
 * last byte, unlike v1's exclusive end), the server's pacing header, the `Job-Status` header read as
 * what the runner must do, and the CRC-32 checksum of the trace the final PUT carries.
 */
import { crc32 } from 'node:zlib';

/** `Content-Range` of a non-empty part covering bytes `[start, end)`: `<start>-<end - 1>`. */
export function formatInclusiveRange(start: number, end: number): string {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end <= start) {
    throw new RangeError(`invalid v4 trace range ${start}-${end} (a part is never empty)`);
  }
  return `${start}-${end - 1}`;
}

/** Longest update interval honoured (GitLab Runner's cap). */
export const MAX_UPDATE_INTERVAL_MS = 15 * 60_000;

/**
 * `X-GitLab-Trace-Update-Interval` in ms: a positive whole number of seconds, capped at 15 minutes.
 * Undefined when absent, empty, zero or unreadable (the runner keeps its current interval).
 */
export function parseUpdateInterval(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return undefined;
  const seconds = Number(value);
  return seconds > 0 ? Math.min(seconds * 1000, MAX_UPDATE_INTERVAL_MS) : undefined;
}

/**
 * What a `Job-Status` header asks of the runner: `canceling` is a graceful cancel (the script is
 * stopped, after_script still runs); `canceled` and `failed` mean stop at once. Anything else
 * (`running`, absent) asks nothing.
 */
export function cancelRequest(jobStatus: string | undefined): 'graceful' | 'now' | undefined {
  const status = jobStatus?.trim().toLowerCase();
  if (status === 'canceling') return 'graceful';
  if (status === 'canceled' || status === 'failed') return 'now';
  return undefined;
}

/** A running CRC-32 (IEEE), as `crc32:` plus 8 lower-case hex digits. */
export class TraceChecksum {
  private value = 0;
  private length = 0;

  /** Bytes covered so far. */
  get bytesize(): number {
    return this.length;
  }

  update(bytes: Uint8Array): void {
    this.value = crc32(bytes, this.value);
    this.length += bytes.byteLength;
  }

  reset(): void {
    this.value = 0;
    this.length = 0;
  }

  toString(): string {
    return formatChecksum(this.value);
  }
}

/** `crc32:xxxxxxxx`. */
export function formatChecksum(value: number): string {
  return `crc32:${(value >>> 0).toString(16).padStart(8, '0')}`;
}
