/**
 * The file reader under yauzl for a zip on disk, reading through a window. yauzl's own reader makes
 * one positional read per structure it parses: two per central-directory record, two per local
 * header. An archive of 9,000 small files then costs ~50,000 reads of a few dozen bytes, each a trip
 * through libuv's thread pool, for each of the two passes of an extraction; on a busy machine that
 * was tens of seconds. Here a read that falls inside one of the last windows loaded (256 KiB each,
 * loaded where a read misses; several, since extraction walks the central directory at the end of
 * the file and the local headers at its start in turn) is a copy from memory; content ranges
 * outside them stream from the file as before. yauzl does all parsing and checking itself; this
 * only answers its reads.
 */
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { RandomAccessReader } from 'yauzl';

const WINDOW_BYTES = 256 * 1024;
const WINDOWS = 4;
const CHUNK_BYTES = 256 * 1024;

type ReadCallback = (error: Error | null, bytesRead?: number) => void;

export class WindowedZipReader extends RandomAccessReader {
  /** The windows loaded, the most recently used first. */
  private windows: Array<{ start: number; bytes: Buffer }> = [];
  private closed = false;

  constructor(
    private readonly handle: FileHandle,
    private readonly size: number,
  ) {
    super();
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: ReadCallback): void {
    const cached = this.cached(position, length);
    if (cached) {
      cached.copy(buffer, offset);
      process.nextTick(callback, null, length);
      return;
    }
    this.load(position, length).then(
      (bytes) => {
        const n = Math.min(length, bytes.length);
        bytes.copy(buffer, offset, 0, n);
        callback(null, n);
      },
      (error: unknown) => callback(error as Error),
    );
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const cached = this.cached(start, end - start);
    if (cached) return Readable.from([cached], { objectMode: false });
    return rangeStream(this.handle, start, end);
  }

  override close(callback: (error: Error | null) => void): void {
    this.closeFile().then(() => callback(null), (error: unknown) => callback(error as Error));
  }

  /** Closes the file once (yauzl closes through its reference count; a failed open closes here). */
  async closeFile(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }

  /** The bytes [position, position + length) when one window holds all of them. */
  private cached(position: number, length: number): Buffer | undefined {
    const index = this.windows.findIndex(({ start, bytes }) => position >= start && position + length <= start + bytes.length);
    if (index < 0) return undefined;
    const window = this.windows[index]!;
    if (index > 0) this.windows = [window, ...this.windows.filter((_, i) => i !== index)];
    return window.bytes.subarray(position - window.start, position - window.start + length);
  }

  /**
   * Reads from `position`: a window's worth, kept for the reads after it, or exactly `length` bytes
   * when that is more than a window. A buffer handed out earlier is never reused, so a stream still
   * reading an older window is unaffected.
   */
  private async load(position: number, length: number): Promise<Buffer> {
    const want = Math.max(length, Math.min(WINDOW_BYTES, this.size - position));
    const bytes = Buffer.allocUnsafe(Math.max(0, want));
    const { bytesRead } = await this.handle.read(bytes, 0, bytes.length, position);
    const loaded = bytes.subarray(0, bytesRead);
    if (length < WINDOW_BYTES) this.windows = [{ start: position, bytes: loaded }, ...this.windows.slice(0, WINDOWS - 1)];
    return loaded;
  }
}

/**
 * The bytes [start, end) of the file, read positionally. Not the handle's own read stream: destroying
 * that (as yauzl does when its consumer is done) closes the file, and the zip's later entries with it.
 */
function rangeStream(handle: FileHandle, start: number, end: number): Readable {
  let position = start;
  return new Readable({
    highWaterMark: CHUNK_BYTES,
    read(): void {
      const length = Math.min(CHUNK_BYTES, end - position);
      if (length <= 0) {
        this.push(null);
        return;
      }
      const bytes = Buffer.allocUnsafe(length);
      handle.read(bytes, 0, length, position).then(
        ({ bytesRead }) => {
          if (bytesRead === 0) {
            this.destroy(new Error('unexpected end of file'));
            return;
          }
          position += bytesRead;
          this.push(bytes.subarray(0, bytesRead));
        },
        (error: unknown) => this.destroy(error as Error),
      );
    },
  });
}
