/**
 * The trace as the server should have it: the spool up to the output-limit cut, then the notice.
 * Offsets in the protocol are offsets into this view; without a cut it is the spool itself.
 */
import { StringDecoder } from 'node:string_decoder';
import type { SpoolReader } from './spool.js';

/** Largest piece read at once when streaming the whole trace. */
const TEXT_PIECE = 1024 * 1024;

export interface SpoolLength {
  readonly length: number;
}

export class SentTrace {
  private cutAt: number | undefined;
  private notice: Buffer = Buffer.alloc(0);

  constructor(
    private readonly spool: SpoolLength,
    private readonly reader: SpoolReader,
  ) {}

  /** Ends the sent trace at spool offset `cut`, followed by `notice`. */
  setCut(cut: number, notice: string): void {
    this.cutAt = cut;
    this.notice = Buffer.from(notice);
  }

  get cut(): number | undefined {
    return this.cutAt;
  }

  get length(): number {
    return this.cutAt === undefined ? this.spool.length : this.cutAt + this.notice.length;
  }

  /** Bytes `[start, end)` of the sent trace. */
  async read(start: number, end: number): Promise<Buffer> {
    const spoolEnd = this.cutAt ?? Number.POSITIVE_INFINITY;
    const fromSpool = start < spoolEnd ? await this.reader.read(start, Math.min(end, spoolEnd)) : undefined;
    if (end <= spoolEnd) return fromSpool ?? Buffer.alloc(0);
    const notice = this.notice.subarray(Math.max(0, start - spoolEnd), end - spoolEnd);
    return fromSpool ? Buffer.concat([fromSpool, notice]) : notice;
  }

  /** The first `length` bytes as text, in pieces of at most 1 MiB (the body of a full-trace PUT). */
  async *text(length: number): AsyncGenerator<string> {
    const decoder = new StringDecoder('utf8');
    for (let offset = 0; offset < length; offset += TEXT_PIECE) {
      const piece = decoder.write(await this.read(offset, Math.min(length, offset + TEXT_PIECE)));
      if (piece.length > 0) yield piece;
    }
    const rest = decoder.end();
    if (rest.length > 0) yield rest;
  }
}
