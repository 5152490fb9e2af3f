/**
 * Reads a tar or tar.gz archive entry by entry with the `tar` package's parser (gzip is detected by
 * the parser). Entries are handed to the visitor one at a time; while a file's content is not
 * consumed the parser stops, which stops the file stream, so memory stays flat.
 */
import { createReadStream } from 'node:fs';
import { Unzip } from 'minizlib';
import { Parser, type ReadEntry } from 'tar';
import type { ArchiveEntry, EntryVisitor } from './entry.js';
import { ArtifactsError } from './errors.js';

const SPECIAL: Record<string, string> = {
  CharacterDevice: 'character device',
  BlockDevice: 'block device',
  FIFO: 'fifo',
};

/**
 * Visits every entry of the tar (`gzip` false) or tar.gz `file`. Rejects with the visitor's error,
 * ARCHIVE_CORRUPT, or the abort reason. The caller says which it is (from the format it detected
 * or validated): sniffing again here could decode the bytes differently from the validation pass.
 */
export function readTar(file: string, visit: EntryVisitor, signal: AbortSignal, gzip: boolean): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const parser = createTarParser();
    // Small reads on purpose: the inflater inflates each chunk it is given at once and the parser
    // buffers what the current entry has not taken yet, so the read size times the compression
    // ratio bounds memory (16 KiB × ~1000 for all-zero data); a plain tar is read in larger pieces.
    const input = createReadStream(file, { highWaterMark: gzip ? INFLATE_SLICE : 64 * 1024 });
    let settled = false;
    let chain: Promise<void> = Promise.resolve();

    const finish = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) {
        resolve();
        return;
      }
      input.destroy();
      reject(error);
    };
    const onAbort = (): void => finish(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });

    parser.on('entry', (entry: ReadEntry) => {
      chain = chain.then(async () => {
        if (settled) return;
        try {
          await visit(toArchiveEntry(entry));
        } finally {
          // Whatever the visitor left unread is skipped, so the parser can go on.
          if (!entry.emittedEnd) entry.resume();
        }
      });
      chain.catch(finish);
    });
    parser.on('error', (error: Error) => finish(corrupt(file, error)));
    parser.on('end', () => {
      chain.then(() => finish(), finish);
    });
    input.on('error', (error) => finish(corrupt(file, error)));
    if (gzip) {
      const unzip = createInflater();
      unzip.on('error', (error: unknown) => finish(corrupt(file, error as Error)));
      input.pipe(unzip).pipe(parser);
    } else {
      input.pipe(parser);
    }
  });
}

/**
 * The one parser configuration, for the validation pass (`validate-stream.ts`) and the extraction
 * pass alike: both must see exactly the same entries. `filter` (when given) sees every entry first;
 * entries it turns down are skipped, body unread.
 */
export function createTarParser(filter?: (entry: ReadEntry) => boolean): Parser {
  // strict: a checksum failure, a truncated archive or garbage is an error, not a skipped entry.
  // The decompression-ratio guard is off: a cache of zero-filled files legitimately compresses
  // better than 1000:1; the server's size limit is what bounds artifacts.
  return new Parser({ strict: true, maxDecompressionRatio: Infinity, ...(filter ? { filter: (_path, entry) => filter(entry as ReadEntry) } : {}) });
}

/**
 * The gzip inflater both passes put in front of the parser (rather than letting the parser sniff
 * and inflate itself), so that the validation pass can also keep the inflated tar: the parser then
 * gets the very same bytes in both passes, whether pass 2 reads the .tar.gz or that inflated tar.
 * Synchronous (minizlib), like the parser's own.
 */
export function createInflater(): Unzip {
  return new Unzip({});
}

/**
 * Most compressed bytes handed to the inflater at once. It inflates a write synchronously and all
 * of it (gzip reaches ~1030:1 on zeros), so this bounds the memory one write can take: 16 KiB of a
 * bomb is ~16 MiB, where a 64 KiB network chunk would be 64 MiB.
 */
export const INFLATE_SLICE = 16 * 1024;

/** Writes `bytes` to `unzip` in INFLATE_SLICE pieces; stops early once `stop()` says so. */
export function feedInflater(unzip: Unzip, bytes: Buffer, stop: () => boolean): void {
  for (let offset = 0; offset < bytes.length && !stop(); offset += INFLATE_SLICE) {
    unzip.write(bytes.subarray(offset, offset + INFLATE_SLICE));
  }
}

/** The reader-neutral view of a tar entry; `content` streams its body. */
export function toArchiveEntry(entry: ReadEntry): ArchiveEntry {
  const base = {
    name: entry.path,
    mode: entry.mode ?? 0,
    size: 0,
    ...(entry.mtime ? { mtime: entry.mtime } : {}),
  };
  switch (entry.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return { ...base, kind: 'file', size: entry.size, content: () => Promise.resolve(entry) };
    case 'Directory':
    case 'GNUDumpDir':
      return { ...base, kind: 'directory' };
    case 'SymbolicLink':
      return { ...base, kind: 'symlink', linkTarget: entry.linkpath ?? '' };
    case 'Link':
      return { ...base, kind: 'hardlink', linkTarget: entry.linkpath ?? '' };
    default:
      return { ...base, kind: 'unsupported', detail: SPECIAL[entry.type] ?? `tar entry of type ${entry.type}` };
  }
}

function corrupt(file: string, error: Error): ArtifactsError {
  return new ArtifactsError('ARCHIVE_CORRUPT', `${file} is not a readable tar archive: ${error.message}`, { cause: error });
}
