/**
 * The CRC-32 and length of the sent trace's first bytes, as v4's keep-alive and final updates carry
 * them (`output.checksum`, `output.bytesize`). Computed from the trace itself, never from what a
 * request happened to carry, and extended from the last prefix it covered, so a job's keep-alives do
 * not read its whole log again each time.
 */
import { TraceChecksum } from '../protocol/v4/trace-codecs.js';
import type { TraceSource } from './source.js';

/** Largest piece read at once. */
const PIECE = 1024 * 1024;

export class PrefixChecksum {
  private readonly checksum = new TraceChecksum();

  constructor(private readonly trace: Pick<TraceSource, 'read'>) {}

  /**
   * Extends the sum with `bytes`, the trace's bytes from offset `at`, as they are written: a final
   * update then reads nothing back. Ignored unless they continue exactly what the sum covers.
   */
  feed(bytes: Uint8Array, at: number): void {
    if (at === this.checksum.bytesize) this.checksum.update(bytes);
  }

  /** The trace's bytes from `offset` on changed (the output limit's cut): a sum past it starts over. */
  forget(offset: number): void {
    if (this.checksum.bytesize > offset) this.checksum.reset();
  }

  /** `{ checksum, bytesize }` of bytes `[0, length)`. */
  async of(length: number): Promise<{ checksum: string; bytesize: number }> {
    if (length < this.checksum.bytesize) this.checksum.reset();
    for (let offset = this.checksum.bytesize; offset < length; offset = this.checksum.bytesize) {
      const bytes = await this.trace.read(offset, Math.min(length, offset + PIECE));
      if (bytes.byteLength === 0) break;
      this.checksum.update(bytes);
    }
    return { checksum: this.checksum.toString(), bytesize: this.checksum.bytesize };
  }
}
