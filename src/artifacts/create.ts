/**
 * Writes the selected entries into an archive file, streamed: tar.gz with the `tar` package's Pack
 * (default), zip with yazl (for servers and tools that expect the legacy runner's format, §8.1, and
 * v4's `artifact_format: zip`); v4's report formats `gzip` (each file one gzip member naming it, as
 * GitLab Runner writes them) and `raw` (one file as it is, copied). Nothing is held in memory but the
 * entry list; file contents flow from disk through the compressor into the output file.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, readlink, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Pack } from 'tar';
import { ZipFile } from 'yazl';
import { ArtifactsError } from './errors.js';
import { gzipMember } from './gzip-member.js';
import type { SelectedEntry } from './select.js';

export type CreateFormat = 'tar.gz' | 'zip' | 'gzip' | 'raw';

export interface CreateOptions {
  /** The deflate level, 0 (stored) to 9; zlib's default (6) when absent. */
  compressionLevel?: number;
}

/**
 * Archives `entries` (paths relative to `projectDir`) into `out`, deflated at `level` (0–9, 0 storing;
 * absent: zlib's default). Returns the archive's size in bytes. Throws ARCHIVE_CREATE_FAILED (e.g. a
 * selected file vanished) or the abort reason.
 */
export async function createArchive(projectDir: string, entries: SelectedEntry[], out: string, format: CreateFormat, signal: AbortSignal, options: CreateOptions = {}): Promise<number> {
  const root = await realpath(projectDir);
  const level = options.compressionLevel;
  try {
    if (format === 'zip') await createZip(root, entries, out, signal, level);
    else if (format === 'gzip') await createGzip(root, entries, out, signal, level);
    else if (format === 'raw') await createRaw(root, entries, out);
    else await createTarGz(root, entries, out, signal, level);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw new ArtifactsError('ARCHIVE_CREATE_FAILED', `could not create the ${format} archive: ${(error as Error).message}`, { cause: error });
  }
  return (await stat(out)).size;
}

async function createTarGz(root: string, entries: SelectedEntry[], out: string, signal: AbortSignal, level: number | undefined): Promise<void> {
  // noDirRecurse: the selection already lists every entry; strict: a file that vanished or cannot
  // be read fails the archive instead of silently leaving it out. Paths are added through Pack
  // directly (not tar.c), which would read a name starting with "@" as an archive to splice in.
  // maxReadSize: a file is read in pieces of this size (tar's default is 16 MiB per file, with
  // several files in flight); small pieces keep memory flat whatever the file sizes.
  const pack = new Pack({ cwd: root, gzip: level === undefined ? true : { level }, noDirRecurse: true, strict: true, maxReadSize: 1024 * 1024 });
  const written = pipeline(pack, createWriteStream(out), { signal });
  // Pack queues the names and stats/reads a few files at a time as the output drains.
  for (const entry of entries) pack.add(entry.path);
  pack.end();
  await written;
}

async function createZip(root: string, entries: SelectedEntry[], out: string, signal: AbortSignal, level?: number): Promise<void> {
  const compression = level === undefined ? { compress: true } : level === 0 ? { compress: false } : { compress: true, compressionLevel: level };
  const zip = new ZipFile();
  const failed = new Promise<never>((_, reject) => zip.on('error', reject));
  failed.catch(() => undefined);
  const written = pipeline(zip.outputStream, createWriteStream(out), { signal });
  for (const entry of entries) {
    const options = { mode: entry.mode & 0xffff, mtime: entry.mtime };
    if (entry.kind === 'directory') zip.addEmptyDirectory(`${entry.path}/`, options);
    else if (entry.kind === 'symlink') zip.addBuffer(Buffer.from(await readlink(join(root, entry.path))), entry.path, { ...options, compress: false });
    // An empty file has nothing to read or deflate: stored as it is, with no file opened and no
    // compressor made for it (thousands of them cost seconds of CPU otherwise).
    else if (entry.size === 0) zip.addBuffer(Buffer.alloc(0), entry.path, { ...options, compress: false });
    else zip.addFile(join(root, entry.path), entry.path, { ...options, ...compression });
  }
  zip.end();
  await Promise.race([written, failed]);
}

/** Each regular file one gzip member carrying its path (directories and symlinks have no content to send). */
async function createGzip(root: string, entries: SelectedEntry[], out: string, signal: AbortSignal, level: number | undefined): Promise<void> {
  const files = entries.filter((entry) => entry.kind === 'file');
  async function* members(): AsyncGenerator<Buffer> {
    for (const entry of files) yield* gzipMember(entry.path, entry.mtime, createReadStream(join(root, entry.path), { highWaterMark: 1024 * 1024 }), level);
  }
  await pipeline(members, createWriteStream(out), { signal });
}

/** A raw artifact is exactly one file, sent as it is. */
async function createRaw(root: string, entries: SelectedEntry[], out: string): Promise<void> {
  const files = entries.filter((entry) => entry.kind === 'file');
  if (files.length !== 1) throw new Error(`a raw artifact is one file; ${files.length} matched (${files.slice(0, 3).map((f) => f.path).join(', ')})`);
  await copyFile(join(root, files[0]!.path), out);
}
