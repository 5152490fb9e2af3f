/**
 * The spool: the job's whole (sanitised, masked) log as an append-only file in the job's state
 * directory. It is the single source of truth; senders only keep offsets into it (STYLE habit 6).
 *
 * Appends are synchronous writes to the file (page cache). There is deliberately no in-memory queue:
 * memory stays flat however much a job prints, ordering is trivially preserved, and a `Writable` fed
 * from a process's pipe gets backpressure from the disk alone. A write never waits on the network.
 */
import { constants, openSync, writeSync, closeSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { openRegularFile } from '../util/existing-file.js';

export class SpoolWriter {
  private fd: number | undefined;
  private written = 0;

  private constructor(
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /**
   * Creates (or truncates) the spool file, readable by the runner alone: with a job user the state
   * dir is traversable by everyone (0711), and the log is the job's. Never through a link.
   */
  static create(path: string): SpoolWriter {
    return new SpoolWriter(path, openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600));
  }

  /** Bytes appended so far. */
  get length(): number {
    return this.written;
  }

  /** Appends `bytes`; throws if the disk refuses (full, closed). */
  append(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    if (this.fd === undefined) throw new Error(`spool ${this.path} is closed`);
    let offset = 0;
    while (offset < bytes.byteLength) {
      offset += writeSync(this.fd, bytes, offset, bytes.byteLength - offset, this.written + offset);
    }
    this.written += bytes.byteLength;
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Random-access reads of the spool (a second descriptor, so reads never disturb appends). */
export class SpoolReader {
  private constructor(private readonly handle: FileHandle) {}

  /** Opens the spool at `path`, never through a link, and says its size and last write. */
  static async open(path: string): Promise<{ reader: SpoolReader; size: number; mtime: Date }> {
    const handle = await openRegularFile(path);
    const { size, mtime } = await handle.stat();
    return { reader: new SpoolReader(handle), size, mtime };
  }

  /** Reads bytes `[start, end)`; the caller guarantees they have been appended. */
  async read(start: number, end: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(end - start);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await this.handle.read(buffer, filled, buffer.length - filled, start + filled);
      if (bytesRead === 0) throw new Error(`spool ended at ${start + filled}, expected ${end} bytes`);
      filled += bytesRead;
    }
    return buffer;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
