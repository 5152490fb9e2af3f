/**
 * The validation pass of a tar(.gz) archive, run on the bytes while they download (the E8 body is
 * teed into it), so that after the download only the extraction pass is left.
 *
 * It is the same pass `extractArchive` would otherwise run over the file: the same tar parser
 * configuration (`createTarParser`) and the same guard in plan mode, so it sees exactly the entries
 * the extraction pass will see. Entry bodies are skipped unread (the parser's ignore path), only
 * headers go through the guard. The download stops at the first unsafe entry.
 *
 * Zip archives are not validated here: their names live in the central directory at the end, and
 * `extractArchive` reads only that directory in its own pass 1, which is cheap. A validator result
 * belongs to one download attempt: a retried download needs a new validator.
 *
 * With `inflateTo`, a tar.gz is also saved inflated there, as it is validated: pass 2 then reads
 * that plain tar and does not inflate the archive a second time (the parser gets the very same
 * bytes in both passes either way; see `createInflater`). It costs the disk the uncompressed size
 * until extraction ends — what extraction writes anyway.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import type { Unzip } from 'minizlib';
import type { Parser, ReadEntry } from 'tar';
import { sniffFormat, type ArchiveFormat } from './extract.js';
import { ExtractionGuard } from './guard.js';
import { ArtifactsError } from './errors.js';
import { createInflater, createTarParser, toArchiveEntry } from './tar-read.js';

/** Proof that an archive's entries all passed the guard, for `extractArchive`'s `validated` option. */
export interface ValidatedArchive {
  /** The file to extract (the archive, or the inflated tar) and its format. */
  file: string;
  format: ArchiveFormat;
  /** The project dir (real path) the entries were checked against. */
  root: string;
}

const SNIFF_BYTES = 512;

export class StreamValidator {
  private readonly guard: ExtractionGuard;
  private head: Buffer[] = [];
  private headLength = 0;
  private decided = false;
  private format: ArchiveFormat | undefined;
  private parser: Parser | undefined;
  private unzip: Unzip | undefined;
  private inflated: WriteStream | undefined;
  private parsed: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;

  /**
   * `root`: the project dir's real path; `lexicalRoot`: as configured (see GuardOptions); `file`:
   * where the bytes are being saved, for messages.
   */
  constructor(private readonly options: { root: string; lexicalRoot: string; file: string; inflateTo?: string }) {
    this.guard = new ExtractionGuard({ root: options.root, lexicalRoot: options.lexicalRoot, mode: 'plan' });
  }

  /**
   * Feeds the next chunk of the archive, in order. Throws the first failure (ARCHIVE_UNSAFE,
   * ARCHIVE_CORRUPT) as soon as it is known, so that the download can stop there.
   */
  write(chunk: Buffer): void | Promise<void> {
    this.throwFailure();
    let bytes = chunk;
    if (!this.decided) {
      this.head.push(chunk);
      this.headLength += chunk.length;
      if (this.headLength < SNIFF_BYTES) return undefined;
      bytes = this.decide();
    }
    this.feed(bytes);
    this.throwFailure();
    // The inflated copy is behind: the caller (the download) waits for it.
    if (this.inflated?.writableNeedDrain) return this.drained(this.inflated);
    return undefined;
  }

  private feed(bytes: Buffer): void {
    if (this.unzip) this.unzip.write(bytes);
    else this.parser?.write(bytes);
  }

  private drained(stream: WriteStream): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (error?: unknown): void => {
        stream.off('drain', done).off('error', done).off('close', done);
        if (error !== undefined) reject(error);
        else resolve();
      };
      // 'close' too: a failure destroys the stream, and the next write() reports the failure.
      stream.on('drain', done).on('error', done).on('close', done);
    });
  }

  /**
   * Call once the whole archive was fed. Resolves with the proof for `extractArchive`, or with
   * undefined when this format is not validated here (zip, or unknown: `extractArchive` reads zips
   * its own way and reports unknown formats). Rejects with the first failure.
   */
  async finish(): Promise<ValidatedArchive | undefined> {
    this.throwFailure();
    if (!this.decided) {
      // Shorter than SNIFF_BYTES: decide on what there is (decide() first: it creates the parser).
      const head = this.decide();
      this.feed(head);
    }
    if (this.unzip) this.unzip.end();
    else this.parser?.end();
    await this.parsed;
    this.throwFailure();
    try {
      // Every entry passed on its own; now the links against the layout the whole archive leaves.
      if (this.parser) this.guard.finish();
    } catch (error) {
      this.fail(error);
    }
    this.throwFailure();
    if (this.inflated) {
      this.inflated.end();
      await finished(this.inflated);
    }
    this.throwFailure();
    if (!this.parser || !this.format) return undefined;
    if (this.inflated && this.options.inflateTo) return { file: this.options.inflateTo, format: 'tar', root: this.options.root };
    return { file: this.options.file, format: this.format, root: this.options.root };
  }

  /** Tells the format from the bytes collected so far and returns them, to be parsed first. */
  private decide(): Buffer {
    const head = Buffer.concat(this.head);
    this.head = [];
    this.decided = true;
    this.format = sniffFormat(head);
    if (this.format !== 'tar.gz' && this.format !== 'tar') return head;
    const parser = createTarParser((entry: ReadEntry) => {
      if (this.failure) return false;
      try {
        this.guard.place(toArchiveEntry(entry));
      } catch (error) {
        this.fail(error);
        parser.abort(error instanceof Error ? error : new Error(String(error)));
      }
      // Every entry is turned down: the parser skips its body without handing it to anyone.
      return false;
    });
    this.parser = parser;
    this.parsed = new Promise<void>((resolve) => {
      const corrupt = (error: unknown): void => {
        const message = error instanceof Error ? error.message : String(error);
        this.fail(new ArtifactsError('ARCHIVE_CORRUPT', `${this.options.file} is not a readable tar archive: ${message}`, { cause: error }));
        resolve();
      };
      parser.on('end', () => resolve());
      parser.on('error', corrupt);
      if (this.format !== 'tar.gz') return;
      const unzip = createInflater();
      this.unzip = unzip;
      const inflated = this.options.inflateTo ? createWriteStream(this.options.inflateTo, { highWaterMark: 1024 * 1024 }) : undefined;
      this.inflated = inflated;
      inflated?.on('error', (error: Error) => {
        this.fail(new ArtifactsError('ARCHIVE_EXTRACT_FAILED', `could not write ${this.options.inflateTo ?? ''}: ${error.message}`, { cause: error }));
        resolve();
      });
      unzip.on('data', (raw: Buffer) => {
        if (this.failure) return;
        parser.write(raw);
        inflated?.write(raw);
      });
      unzip.on('end', () => parser.end());
      unzip.on('error', corrupt);
    });
    return head;
  }

  /** Keeps the first failure only: the guard's refusal must not be replaced by the parser's abort error. */
  private fail(error: unknown): void {
    if (!this.failure) this.failure = { error };
    // The inflated copy is of no use any more; the caller removes the file.
    this.inflated?.destroy();
  }

  private throwFailure(): void {
    if (this.failure) throw this.failure.error;
  }
}
