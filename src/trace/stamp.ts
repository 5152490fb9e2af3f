/**
 * Line timestamps, as GitLab Runner 19 writes them with FF_TIMESTAMPS (its buildlogger's timestamper):
 * every line of the log starts with a 32-byte header
 *
 *     2025-01-31T12:34:56.123456Z 01O <line>
 *
 * the time in UTC to the microsecond and a space, the stream (two hex digits: 00 the runner's own lines,
 * 01 the job's output), the stream's type (`O` out, `E` err) and the line's type: ` ` a line of its own,
 * `+` the continuation of the line before (GitLab's page joins them). A piece of a line ends where
 * GitLab Runner's would: at `\n`; after a write that holds `\r` but no further `\n` (a progress bar:
 * the piece is shown at once, ended with a `\n`, and the line goes on as `+`); and where a line grows
 * past 8 KiB without a newline (the same). A stream's end ends its open line with a `\n`.
 *
 * Unlike GitLab Runner, which holds a line back until it is complete, the header is written with the
 * line's first byte and the rest follows as it comes, so a partial line is seen live; the bytes are
 * the same. When another stream writes while a line is open, that line is ended with a `\n` first (the
 * header of the other stream's line must start a line), and what follows of it is a line of its own,
 * not a `+`: a continuation continues the line just before it. The stamp is taken once per write: the
 * lines of one chunk arrived together.
 */

/** `YYYY-MM-DDTHH:MM:SS.uuuuuuZ ` + stream id (2) + stream type + line type. */
export const STAMP_LENGTH = 32;
/** GitLab Runner's bufSize: a line longer than this without a newline is cut into `+` pieces. */
const MAX_PIECE = 8 * 1024;
const NEWLINE = 0x0a;
const RETURN = 0x0d;
const LINE_END = Buffer.from('\n');
const EMPTY = Buffer.alloc(0);

export type StreamType = 'O' | 'E';

/** What the stampers of one trace share: which of them wrote last. */
export class StampedLog {
  last: LineStamper | undefined;
  /** The time part of the header (`YYYY-MM-DDTHH:MM:SS.`) and the second it is for. */
  private second = -1;
  private date = Buffer.alloc(20);

  /** Writes the header's time (27 bytes and a space) for `ms` (epoch ms, fractional) into `into`. */
  writeTime(into: Buffer, ms: number): void {
    const second = Math.floor(ms / 1000);
    if (second !== this.second) {
      this.second = second;
      this.date.write(new Date(second * 1000).toISOString().slice(0, 20), 'latin1');
    }
    this.date.copy(into, 0);
    let micros = Math.min(999_999, Math.floor((ms - second * 1000) * 1000));
    for (let i = 25; i >= 20; i -= 1) {
      into[i] = 0x30 + (micros % 10);
      micros = Math.floor(micros / 10);
    }
  }
}

/** Stamps one stream's lines (see the module comment). */
export class LineStamper {
  /** The header of a line of its own, and of a continuation; their time is refreshed per write. */
  private readonly full = Buffer.alloc(STAMP_LENGTH);
  private readonly partial = Buffer.alloc(STAMP_LENGTH);
  private stampedAt = Number.NaN;
  /** A header was written and its line has had no `\n` yet. */
  private open = false;
  /** Bytes of the open piece, its header included (GitLab Runner's buffer length). */
  private pieceBytes = 0;
  /** The next header is a `+` one. */
  private continued = false;

  constructor(
    private readonly log: StampedLog,
    stream: number,
    type: StreamType,
  ) {
    for (const header of [this.full, this.partial]) {
      header.write('0000-00-00T00:00:00.000000Z ', 'latin1');
      header.write(stream.toString(16).padStart(2, '0').slice(-2), 28, 'latin1');
      header.write(type, 30, 'latin1');
    }
    this.full[31] = 0x20;
    this.partial[31] = 0x2b;
  }

  /** The stamped form of `data`, for a write at `now` (epoch ms, fractional). */
  push(data: Buffer, now: number): Buffer {
    if (data.length === 0) return EMPTY;
    const interrupted = this.takeTurn();
    const rest = data.lastIndexOf(NEWLINE) + 1;
    const tail = data.length - rest;
    let lines = 0;
    for (let at = data.indexOf(NEWLINE); at >= 0; at = data.indexOf(NEWLINE, at + 1)) lines += 1;
    // The open piece the tail joins: none once a newline ended it.
    const openBefore = lines === 0 && this.open;
    // How the bytes after the last newline end: still open, or ended here (`\r`, or too long).
    const ends = tail > 0 && (data.indexOf(RETURN, rest) >= 0 || (openBefore ? this.pieceBytes : 0) + tail > MAX_PIECE);
    const headers = (lines > 0 ? lines - (this.open ? 1 : 0) : 0) + (tail > 0 && !openBefore ? 1 : 0);
    const out = Buffer.allocUnsafe(interrupted.length + data.length + headers * STAMP_LENGTH + (ends ? 1 : 0));
    let o = interrupted.copy(out, 0);
    if (headers > 0) this.stamp(now);
    let from = 0;
    for (let at = lines > 0 ? data.indexOf(NEWLINE) : -1; at >= 0; at = data.indexOf(NEWLINE, at + 1)) {
      if (!this.open) o += this.header().copy(out, o);
      o += data.copy(out, o, from, at + 1);
      from = at + 1;
      this.open = false;
      this.pieceBytes = 0;
    }
    if (tail > 0) {
      if (!this.open) {
        o += this.header().copy(out, o);
        this.open = true;
        this.pieceBytes = STAMP_LENGTH;
      }
      o += data.copy(out, o, rest);
      this.pieceBytes += tail;
      if (ends) {
        out[o] = NEWLINE;
        o += 1;
        this.open = false;
        this.pieceBytes = 0;
        this.continued = true;
      }
    }
    return o === out.length ? out : out.subarray(0, o);
  }

  /** The stream ends: its open line gets its `\n`. */
  end(): Buffer {
    if (!this.open) return EMPTY;
    this.open = false;
    this.pieceBytes = 0;
    return LINE_END;
  }

  /**
   * This stream writes next: a line another stream left open is ended first (the bytes returned go
   * before ours), and a `+` owed from before that write no longer continues anything.
   */
  private takeTurn(): Buffer {
    const previous = this.log.last;
    if (previous === this) return EMPTY;
    this.log.last = this;
    this.continued = false;
    if (!previous) return EMPTY;
    previous.continued = false;
    return previous.end();
  }

  private stamp(now: number): void {
    if (now === this.stampedAt) return;
    this.stampedAt = now;
    this.log.writeTime(this.full, now);
    this.full.copy(this.partial, 0, 0, 28);
  }

  private header(): Buffer {
    const header = this.continued ? this.partial : this.full;
    this.continued = false;
    return header;
  }
}

/** Now, in epoch milliseconds with microseconds (the header's clock). */
export function stampClock(): number {
  return performance.timeOrigin + performance.now();
}
