/**
 * Safe extraction of a downloaded artifacts archive or a cache archive into the project dir.
 *
 * Strategy: two passes over the archive file. Pass 1 reads every entry header (nothing is written)
 * and runs it through the guard with a virtual view of the links the archive creates; any unsafe
 * entry refuses the whole archive before a byte is written. Pass 2 reads the archive again and
 * writes each entry, re-checking it against the real disk first (defence in depth: the disk is the
 * truth once writing starts). The price is reading (and for tar.gz, inflating) the archive twice;
 * in exchange nothing is staged or copied, and zip pass 1 reads only the central directory.
 */
import { open, mkdir, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ArchiveReader, ArchiveEntry } from './entry.js';
import { ArtifactsError } from './errors.js';
import { ExtractionGuard } from './guard.js';
import { readTar } from './tar-read.js';
import { EntryWriter } from './writer.js';
import { readZip } from './zip-read.js';

export type ArchiveFormat = 'tar.gz' | 'tar' | 'zip';

export interface ExtractSummary {
  format: ArchiveFormat;
  /** Entries written (directories included). */
  entries: number;
  /** Bytes of file content written. */
  bytes: number;
}

/** Tells the format from the first bytes: gzip, zip (local header or empty-zip EOCD), or ustar. */
export async function detectFormat(file: string): Promise<ArchiveFormat> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await handle.read(head, 0, 512, 0);
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
    const magic = head.subarray(0, 4).toString('latin1');
    if (magic === 'PK\x03\x04' || magic === 'PK\x05\x06') return 'zip';
    if (bytesRead >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
    throw new ArtifactsError('ARCHIVE_CORRUPT', `${file} is neither a tar.gz, a tar nor a zip archive (${bytesRead} bytes)`);
  } finally {
    await handle.close();
  }
}

/**
 * Extracts `file` over `projectDir` (created when missing): existing files are replaced, parent
 * directories created. Throws ArtifactsError `ARCHIVE_UNSAFE` (nothing written), `ARCHIVE_CORRUPT`,
 * `ARCHIVE_EXTRACT_FAILED`, or the abort reason.
 */
export async function extractArchive(file: string, projectDir: string, signal: AbortSignal): Promise<ExtractSummary> {
  const format = await detectFormat(file);
  const read: ArchiveReader = format === 'zip' ? readZip : readTar;
  await mkdir(projectDir, { recursive: true });
  const root = await realpath(projectDir);
  const lexicalRoot = resolve(projectDir);

  const plan = new ExtractionGuard({ root, lexicalRoot, mode: 'plan' });
  try {
    await read(file, (entry) => {
      plan.place(entry);
      return Promise.resolve();
    }, signal);
  } catch (error) {
    if (error instanceof ArtifactsError && error.code === 'ARCHIVE_UNSAFE') {
      throw new ArtifactsError('ARCHIVE_UNSAFE', `refusing the whole archive, nothing was extracted: ${error.message}`, { cause: error });
    }
    throw error;
  }

  const live = new ExtractionGuard({ root, lexicalRoot, mode: 'live' });
  const writer = new EntryWriter(root, signal);
  const summary: ExtractSummary = { format, entries: 0, bytes: 0 };
  await read(file, async (entry: ArchiveEntry) => {
    const placement = live.place(entry);
    if (!placement) return;
    await writer.write(placement, entry);
    summary.entries += 1;
    if (entry.kind === 'file') summary.bytes += entry.size;
  }, signal);
  return summary;
}
