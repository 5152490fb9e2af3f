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
 * Nothing inflated is kept: the extraction pass inflates the archive again. Keeping the inflated
 * tar would save that CPU but cost the disk the whole uncompressed size a second time, and a 1 MB
 * archive can inflate to a gigabyte. Memory stays flat whatever the archive inflates
 * to: the inflater is fed in small slices (see `feedInflater`) and entry bodies are dropped unread.
 */
import type { Unzip } from 'minizlib';
import type { Parser, ReadEntry } from 'tar';
import { sniffFormat, type ArchiveFormat } from './format.js';
import { ExtractionGuard } from './guard.js';
import { ArtifactsError } from './errors.js';
import type { ExtractBudget, ExtractTally } from './budget.js';
import { createInflater, createTarParser, feedInflater, toArchiveEntry } from './tar-read.js';

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
  private readonly tally: ExtractTally | undefined;
  private parsed: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;

  /**
   * `root`: the project dir's real path; `lexicalRoot`: as configured (see GuardOptions); `file`:
   * where the bytes are being saved, for messages; `budget`: the job's extract limit, checked
   * against the sizes the headers declare.
   */
  constructor(private readonly options: { root: string; lexicalRoot: string; file: string; budget?: ExtractBudget }) {
    this.guard = new ExtractionGuard({ root: options.root, lexicalRoot: options.lexicalRoot, mode: 'plan' });
    this.tally = options.budget?.tally();
  }

  /**
   * Feeds the next chunk of the archive, in order. Throws the first failure (ARCHIVE_UNSAFE,
   * ARCHIVE_CORRUPT) as soon as it is known, so that the download can stop there.
   */
  write(chunk: Buffer): void {
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
  }

  private feed(bytes: Buffer): void {
    if (this.unzip) feedInflater(this.unzip, bytes, () => this.failure !== undefined);
    else this.parser?.write(bytes);
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
    if (!this.parser || !this.format) return undefined;
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
        const header = toArchiveEntry(entry);
        this.guard.place(header);
        this.tally?.add(header);
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
      unzip.on('data', (raw: Buffer) => {
        if (this.failure) return;
        parser.write(raw);
      });
      unzip.on('end', () => parser.end());
      unzip.on('error', corrupt);
    });
    return head;
  }

  /** Keeps the first failure only: the guard's refusal must not be replaced by the parser's abort error. */
  private fail(error: unknown): void {
    if (!this.failure) this.failure = { error };
  }

  private throwFailure(): void {
    if (this.failure) throw this.failure.error;
  }
}
