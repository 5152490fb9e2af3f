/**
 * Where a tar stream ends, and the trailer after it. The copy-back's command in the pod prints its
 * archive, then a trailer with tar's exit status and error output, then waits for the runner to
 * close the connection: the runner learns the result from the trailer, not from the exec's status
 * frame, which a cluster can lose with the last bytes of a long stream (see transfer.ts).
 *
 * The archive's bytes (and the zero padding after its end) pass through; the trailer is kept. The
 * end of the archive is found by walking its headers (each entry's data is skipped by its size) to
 * the two zero blocks that end it, so no byte of a file's content is ever taken for the trailer.
 */
import { Transform, type TransformCallback } from 'node:stream';

const BLOCK = 512;
export const TRAILER_START = 'CI-RUNNER-TAR-EXIT ';
export const TRAILER_END = '\nCI-RUNNER-TAR-END\n';
/** Most trailer bytes kept (tar's error lines); a trailer longer than this is cut at its start. */
const TRAILER_KEEP = 16 * 1024;

export interface TarTrailer {
  exitCode: number;
  /** What tar wrote to its standard error (the last TRAILER_KEEP bytes). */
  errors: string;
}

/** The stream is not what the copy-back's command prints. */
export class TarStreamError extends Error {}

/** The archive is larger than the copy-back may bring (`limitBytes`); nothing past it was taken. */
export class TarOverLimitError extends TarStreamError {
  readonly code = 'COLLECT_OVER_LIMIT';

  constructor(readonly limitBytes: number, readonly atLeast: number) {
    super(`the archive of the build's files is at least ${atLeast} bytes, more than the ${limitBytes} bytes the copy-back may bring`);
  }
}

export class TarEndFinder extends Transform {
  /** Entries seen in the archive (0: the pod's project dir was empty). */
  entries = 0;
  /** Set, and 'trailer' emitted, once the whole trailer has come. */
  trailer: TarTrailer | undefined;
  private state: 'header' | 'data' | 'end' | 'trailer' | 'done' = 'header';
  private header = Buffer.alloc(BLOCK);
  private headerFill = 0;
  private dataLeft = 0;
  private zeroBlocks = 0;
  private text = '';
  /** Archive bytes let through so far (headers, data, padding). */
  private archiveBytes = 0;

  /**
   * `limitBytes`: the most archive bytes (headers and data, as declared by each header) let through;
   * an entry that would go past it fails the stream before any of its bytes pass, so whoever writes
   * the archive never holds more than that, whatever size a header claims (a sparse file of 100 GB).
   */
  constructor(private readonly limitBytes = Number.POSITIVE_INFINITY) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      let at = 0;
      while (at < chunk.length) at = this.step(chunk, at);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  /** Consumes bytes of `chunk` from `at` in the current state; returns where it stopped. */
  private step(chunk: Buffer, at: number): number {
    switch (this.state) {
      case 'data': {
        const n = Math.min(this.dataLeft, chunk.length - at);
        this.push(chunk.subarray(at, at + n));
        this.archiveBytes += n;
        this.dataLeft -= n;
        if (this.dataLeft === 0) this.state = 'header';
        return at + n;
      }
      case 'header': {
        const n = Math.min(BLOCK - this.headerFill, chunk.length - at);
        chunk.copy(this.header, this.headerFill, at, at + n);
        this.headerFill += n;
        if (this.headerFill === BLOCK) this.onHeader();
        return at + n;
      }
      case 'end': {
        // Zero padding up to the trailer's first byte (tar pads to its record size), within the limit too.
        let next = at;
        while (next < chunk.length && chunk[next] === 0) next += 1;
        if (this.archiveBytes + next - at > this.limitBytes) throw new TarOverLimitError(this.limitBytes, this.archiveBytes + next - at);
        this.archiveBytes += next - at;
        if (next > at) this.push(chunk.subarray(at, next));
        if (next < chunk.length) this.state = 'trailer';
        return next;
      }
      case 'trailer':
        this.onTrailerText(chunk.subarray(at).toString('latin1'));
        return chunk.length;
      case 'done':
        return chunk.length;
    }
  }

  private onHeader(): void {
    const block = Buffer.from(this.header);
    this.headerFill = 0;
    if (block.every((byte) => byte === 0)) {
      this.pass(block, 0);
      this.zeroBlocks += 1;
      if (this.zeroBlocks === 2) this.state = 'end';
      return;
    }
    this.zeroBlocks = 0;
    this.entries += 1;
    const size = entrySize(block);
    this.dataLeft = Math.ceil(size / BLOCK) * BLOCK;
    this.pass(block, this.dataLeft);
    if (this.dataLeft > 0) this.state = 'data';
  }

  /** Lets a header through when it and the data it announces fit in the limit. */
  private pass(block: Buffer, announced: number): void {
    const after = this.archiveBytes + BLOCK + announced;
    if (after > this.limitBytes) throw new TarOverLimitError(this.limitBytes, after);
    this.archiveBytes += BLOCK;
    this.push(block);
  }

  private onTrailerText(text: string): void {
    this.text += text;
    if (!TRAILER_START.startsWith(this.text.slice(0, TRAILER_START.length))) {
      throw new TarStreamError(`the copy-back's output does not end as expected after its archive: ${JSON.stringify(this.text.slice(0, 80))}`);
    }
    const end = this.text.indexOf(TRAILER_END);
    if (end < 0) {
      // Keep the status line and the newest error output; tar's errors can be long.
      if (this.text.length > 2 * TRAILER_KEEP) {
        const line = this.text.indexOf('\n');
        if (line < 0) throw new TarStreamError('the copy-back\'s trailer has no status line');
        this.text = this.text.slice(0, line + 1) + this.text.slice(-TRAILER_KEEP);
      }
      return;
    }
    const body = this.text.slice(TRAILER_START.length, end);
    const newline = body.indexOf('\n');
    const status = newline < 0 ? body : body.slice(0, newline);
    const exitCode = Number.parseInt(status, 10);
    if (!/^\d+$/.test(status) || !Number.isSafeInteger(exitCode)) throw new TarStreamError(`the copy-back's trailer has no exit status: ${JSON.stringify(status.slice(0, 40))}`);
    const errors = Buffer.from(newline < 0 ? '' : body.slice(newline + 1), 'latin1').toString('utf8').slice(-TRAILER_KEEP);
    this.trailer = { exitCode, errors };
    this.state = 'done';
    this.emit('trailer', this.trailer);
  }
}

/** An entry's size from its header: octal digits, or base-256 (GNU, for sizes of 8 GiB and more). */
function entrySize(block: Buffer): number {
  const field = block.subarray(124, 136);
  if ((field[0]! & 0x80) !== 0) {
    let size = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i += 1) size = size * 256 + field[i]!;
    if (!Number.isSafeInteger(size)) throw new TarStreamError('a tar entry in the copy-back is too large');
    return size;
  }
  const digits = field.toString('latin1').replace(/[\0 ]+/g, '');
  if (!/^[0-7]*$/.test(digits)) throw new TarStreamError(`the copy-back's output is not a tar archive (a header's size is ${JSON.stringify(digits.slice(0, 12))})`);
  return digits === '' ? 0 : Number.parseInt(digits, 8);
}
