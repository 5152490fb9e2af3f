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
