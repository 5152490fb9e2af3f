/**
 * Reads a zip archive entry by entry with yauzl (lazy entries, streamed content). Names come from
 * the central directory; yauzl refuses absolute and `..` names itself, which is reported as
 * ARCHIVE_UNSAFE like the guard's own refusals. Unix modes come from the upper 16 bits of the
 * external attributes (as the legacy runner, Info-ZIP and yazl write them), which is also how a
 * symlink is recognised: its content is the link target.
 */
import { open } from 'node:fs/promises';
import { fromRandomAccessReader, type Entry, type ZipFile } from 'yauzl';
import type { ArchiveEntry, EntryVisitor } from './entry.js';
import { ArtifactsError } from './errors.js';
import { WindowedZipReader } from './zip-window.js';

const S_IFMT = 0o170000;
const TYPES: Record<number, { kind: ArchiveEntry['kind']; detail?: string }> = {
  0o100000: { kind: 'file' },
  0o040000: { kind: 'directory' },
  0o120000: { kind: 'symlink' },
  0o020000: { kind: 'unsupported', detail: 'character device' },
  0o060000: { kind: 'unsupported', detail: 'block device' },
  0o010000: { kind: 'unsupported', detail: 'fifo' },
  0o140000: { kind: 'unsupported', detail: 'socket' },
};
const MAX_LINK_TARGET = 4096;

/** Visits every entry of the zip `file`. Rejects with the visitor's error, ARCHIVE_UNSAFE/CORRUPT, or the abort reason. */
export async function readZip(file: string, visit: EntryVisitor, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason;
  const zip = await openZip(file);
  // yauzl may still report an error after the last entry we waited for; without a listener an
  // EventEmitter 'error' would crash the daemon. Errors that matter are caught per entry below.
  zip.on('error', () => undefined);
  try {
    for (let entry = await nextEntry(zip, file, signal); entry; entry = await nextEntry(zip, file, signal)) {
      await visit(await toArchiveEntry(zip, file, entry));
    }
  } finally {
    zip.close();
  }
}

/** yauzl over the file through a {@link WindowedZipReader}; the file is closed when `zip.close()` is. */
async function openZip(file: string): Promise<ZipFile> {
  const handle = await open(file, 'r').catch((error: unknown) => {
    throw zipError(file, error as Error);
  });
  let reader: WindowedZipReader | undefined;
  try {
    const { size } = await handle.stat();
    reader = new WindowedZipReader(handle, size);
    const windowed = reader;
    return await new Promise<ZipFile>((resolve, reject) => {
      fromRandomAccessReader(windowed, size, { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: true, strictFileNames: false }, (error, opened) =>
        error ? reject(zipError(file, error)) : resolve(opened),
      );
    });
  } catch (error) {
    await (reader ? reader.closeFile() : handle.close()).catch(() => undefined);
    throw error instanceof ArtifactsError ? error : zipError(file, error as Error);
  }
}

function nextEntry(zip: ZipFile, file: string, signal: AbortSignal): Promise<Entry | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = (): void => {
      zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
      signal.removeEventListener('abort', onAbort);
    };
    const onEntry = (entry: Entry): void => {
      cleanup();
      resolve(entry);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(undefined);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(zipError(file, error));
    };
    const onAbort = (): void => {
      cleanup();
      reject(signal.reason);
    };
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    signal.addEventListener('abort', onAbort, { once: true });
    zip.readEntry();
  });
}

async function toArchiveEntry(zip: ZipFile, file: string, entry: Entry): Promise<ArchiveEntry> {
  const name = entry.fileName;
  if (entry.isEncrypted()) throw new ArtifactsError('ARCHIVE_CORRUPT', `${name} in ${file} is encrypted; encrypted zips are not supported`);
  const unix = entry.externalFileAttributes >>> 16;
  const type = TYPES[unix & S_IFMT] ?? { kind: name.endsWith('/') ? 'directory' : 'file' };
  const kind = name.endsWith('/') && type.kind === 'file' ? 'directory' : type.kind;
  const base = { name, mode: unix & 0o7777, size: 0, mtime: entry.getLastModDate() };
  const content = (): Promise<AsyncIterable<Uint8Array>> => openContent(zip, file, entry);
  switch (kind) {
    case 'file':
      // An empty file's data is not read at all (no inflater for it): there is nothing to write.
      return { ...base, kind, size: entry.uncompressedSize, content: entry.uncompressedSize === 0 ? noContent : content };
    case 'symlink':
      return { ...base, kind, linkTarget: await readLinkTarget(await content(), name) };
    case 'unsupported':
      return { ...base, kind, ...(type.detail ? { detail: type.detail } : {}) };
    default:
      return { ...base, kind };
  }
}

async function noContent(): Promise<AsyncIterable<Uint8Array>> {
  return (async function* () {})();
}

function openContent(zip: ZipFile, file: string, entry: Entry): Promise<AsyncIterable<Uint8Array>> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, stream) => (error ? reject(zipError(file, error)) : resolve(stream)));
  });
}

async function readLinkTarget(stream: AsyncIterable<Uint8Array>, name: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of stream) {
    length += chunk.byteLength;
    if (length > MAX_LINK_TARGET) throw new ArtifactsError('ARCHIVE_UNSAFE', `entry ${JSON.stringify(name)} is a symlink with an oversized target`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** yauzl's own name checks become ARCHIVE_UNSAFE; everything else is a damaged archive. */
function zipError(file: string, error: Error): ArtifactsError {
  if (/^(absolute path|invalid relative path|invalid characters in fileName)/.test(error.message)) {
    return new ArtifactsError('ARCHIVE_UNSAFE', `zip entry refused: ${error.message}`, { cause: error });
  }
  return new ArtifactsError('ARCHIVE_CORRUPT', `${file} is not a readable zip archive: ${error.message}`, { cause: error });
}
