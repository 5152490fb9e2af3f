/**
 * The one shape every archive reader produces, so that validation and writing do not care whether
 * the bytes came from a tar.gz, a plain tar or a zip.
 */
import type { EntryHeader } from './guard.js';

export interface ArchiveEntry extends EntryHeader {
  /** Permission bits as stored (0 when the archive has none). */
  mode: number;
  /** Uncompressed size in bytes (0 for anything but files). */
  size: number;
  mtime?: Date;
  /** The file's bytes; only for `file` entries, and only while the visitor runs. */
  content?: () => Promise<AsyncIterable<Uint8Array>>;
}

/**
 * Called once per entry, in archive order; the next entry is read only after the returned promise
 * settles. A visitor that does not read `content` leaves the reader to skip it.
 */
export type EntryVisitor = (entry: ArchiveEntry) => Promise<void>;

export type ArchiveReader = (file: string, visit: EntryVisitor, signal: AbortSignal) => Promise<void>;
