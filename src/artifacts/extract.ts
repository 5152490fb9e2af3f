/**
 * Safe extraction of a downloaded artifacts archive or a cache archive into the project dir.
 *
 * Strategy: two passes over the archive. Pass 1 reads every entry header (nothing is written)
 * and runs it through the guard with a virtual view of the links the archive creates; any unsafe
 * entry refuses the whole archive before a byte is written. Pass 2 reads the archive again and
 * writes each entry, re-checking it against the real disk first (defence in depth: the disk is the
 * truth once writing starts). The price is reading (and for tar.gz, inflating) the archive twice;
 * in exchange nothing is staged in the project, and zip pass 1 reads only the central directory.
 * Tar pass 1 is `StreamValidator` (headers only, bodies skipped unread). For a downloaded archive
 * it runs on the bytes as they arrive, overlapping the network. Neither pass keeps anything
 * inflated in memory or on disk beyond the files written, so a small archive that inflates to
 * gigabytes costs its files' size on disk and flat memory.
 */
import { createReadStream, lstatSync, unlinkSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ExtractBudget } from './budget.js';
import { diskFull, diskFullCode } from './disk-full.js';
import type { ArchiveReader, ArchiveEntry } from './entry.js';
import { ArtifactsError } from './errors.js';
import { detectFormat, type ArchiveFormat } from './format.js';
import { ExtractionGuard } from './guard.js';
import { WriteJournal } from './journal.js';
import { megabytes } from './naming.js';
import { readTar } from './tar-read.js';
import { EntryWriter } from './writer.js';
import { StreamValidator, type ValidatedArchive } from './validate-stream.js';
import { readZip } from './zip-read.js';

export interface ExtractSummary {
  format: ArchiveFormat;
  /** Entries written (directories included). */
  entries: number;
  /** Bytes of file content written. */
  bytes: number;
}

export interface ExtractOptions {
  /**
   * The validation pass already ran over exactly these bytes (`StreamValidator`, while they
   * downloaded), against this project dir: only the extraction pass is left. Ignored unless it is
   * for this very file and this project dir.
   */
  validated?: ValidatedArchive;
  /** The job's `artifacts_extract_limit`: an archive holding more than is left is refused unwritten. */
  budget?: ExtractBudget;
}

/**
 * Extracts `file` over `projectDir` (created when missing): existing files are replaced, parent
 * directories created. Throws ArtifactsError `ARCHIVE_UNSAFE` or `ARCHIVE_OVER_LIMIT` (nothing
 * written), `ARCHIVE_CORRUPT`, `ARCHIVE_EXTRACT_FAILED`, `DISK_FULL`, or the abort reason. When the
 * extraction pass fails, what it wrote so far is removed again (see WriteJournal).
 */
export async function extractArchive(file: string, projectDir: string, signal: AbortSignal, options: ExtractOptions = {}): Promise<ExtractSummary> {
  const proof = options.validated?.file === file ? options.validated : undefined;
  // A proof says what its file is (an inflated tar need not carry the ustar magic detectFormat wants).
  const format = proof ? proof.format : await detectFormat(file);
  const read: ArchiveReader = format === 'zip' ? readZip : (path, visit, s) => readTar(path, visit, s, format === 'tar.gz');
  await mkdir(projectDir, { recursive: true });
  const root = await realpath(projectDir);
  const lexicalRoot = resolve(projectDir);

  if (proof?.root !== root) {
    try {
      await (format === 'zip' ? validateZip(file, root, lexicalRoot, signal, options.budget) : validateTar(file, root, lexicalRoot, signal, options.budget));
    } catch (error) {
      throw refusal(error);
    }
  }

  const live = new ExtractionGuard({ root, lexicalRoot, mode: 'live' });
  const journal = new WriteJournal(root);
  const writer = new EntryWriter(root, signal, journal);
  // Counted again while writing: the proof's validator had the same budget, this keeps it true.
  const tally = options.budget?.tally();
  const summary: ExtractSummary = { format, entries: 0, bytes: 0 };
  try {
    await read(file, async (entry: ArchiveEntry) => {
      const placement = live.place(entry);
      if (!placement) return;
      tally?.add(entry);
      await writer.write(placement, entry);
      summary.entries += 1;
      if (entry.kind === 'file') summary.bytes += entry.size;
    }, signal);
  } catch (error) {
    throw undoExtraction(changedWhileExtracting(error, summary.entries), journal, projectDir, summary);
  }
  // The links once more, as the extraction left them on disk: one leading out is removed, and so is
  // everything else this pass wrote.
  const bad = live.badLinks();
  for (const link of bad) removeLink(join(root, link.location));
  if (bad[0]) {
    const error = changedWhileExtracting(bad[0].error, summary.entries, ` (removed ${bad.map((link) => link.location).join(', ')})`);
    throw undoExtraction(error, journal, projectDir, summary);
  }
  options.budget?.spend(summary.bytes);
  return summary;
}

/**
 * Takes back what a failed extraction pass wrote and returns the error to throw: a full disk
 * becomes DISK_FULL (no retry helps; the line says what was cleaned), anything else is unchanged.
 */
function undoExtraction(error: unknown, journal: WriteJournal, projectDir: string, done: ExtractSummary): unknown {
  const left = journal.rollback();
  const code = diskFullCode(error);
  if (!code) return error;
  const cleaned = left.length === 0
    ? `removed what it had written (${done.entries} entries complete, ${megabytes(done.bytes)}, and the one in progress)`
    : `could not remove ${left.length} of the paths it had written: ${left.slice(0, 3).join(', ')}`;
  return diskFull(code, 'extracting', projectDir, cleaned, error);
}

/**
 * The validation pass judged the archive safe, so the extraction pass refusing an entry means the
 * project dir changed in between (or under it): entries were written by then, so this is no clean
 * refusal but a failed extraction.
 */
function changedWhileExtracting(error: unknown, written: number, note = ''): unknown {
  if (!(error instanceof ArtifactsError) || error.code !== 'ARCHIVE_UNSAFE') return error;
  return new ArtifactsError('ARCHIVE_EXTRACT_FAILED', `the project dir changed while the archive was extracted, after ${written} entries: ${error.message}${note}`, { cause: error });
}

function removeLink(path: string): void {
  try {
    if (lstatSync(path).isSymbolicLink()) unlinkSync(path);
  } catch {
    // Gone already.
  }
}

/** Pass 1 for a zip: the entries of the central directory through the guard. */
async function validateZip(file: string, root: string, lexicalRoot: string, signal: AbortSignal, budget?: ExtractBudget): Promise<void> {
  const plan = new ExtractionGuard({ root, lexicalRoot, mode: 'plan' });
  const tally = budget?.tally();
  await readZip(file, (entry) => {
    plan.place(entry);
    tally?.add(entry);
    return Promise.resolve();
  }, signal);
  plan.finish();
}

/** Pass 1 for a tar(.gz): the file through the same validator a download uses (bodies skipped unread). */
async function validateTar(file: string, root: string, lexicalRoot: string, signal: AbortSignal, budget?: ExtractBudget): Promise<void> {
  const validator = new StreamValidator({ root, lexicalRoot, file, ...(budget ? { budget } : {}) });
  // The validator inflates in small slices itself (memory stays flat whatever the read size).
  const input = createReadStream(file, { highWaterMark: 64 * 1024, signal });
  try {
    for await (const chunk of input) validator.write(chunk as Buffer);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof ArtifactsError) throw error;
    throw new ArtifactsError('ARCHIVE_CORRUPT', `${file} could not be read: ${(error as Error).message}`, { cause: error });
  }
  // detectFormat said tar: a validator that did not parse it as one must not pass it.
  if (!(await validator.finish())) throw new ArtifactsError('ARCHIVE_CORRUPT', `${file} was not validated as a tar archive`);
}

/** The message for an archive refused by the validation pass; other errors pass unchanged. */
export function refusal(error: unknown): unknown {
  if (error instanceof ArtifactsError && error.code === 'ARCHIVE_UNSAFE') {
    return new ArtifactsError('ARCHIVE_UNSAFE', `refusing the whole archive, nothing was extracted: ${error.message}`, { cause: error });
  }
  return error;
}
