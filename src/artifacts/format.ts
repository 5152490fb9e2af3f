/**
 * Which kind of archive a file is, told from its first bytes rather than its name: a cache or an
 * artifacts archive can come from any runner, and a name says nothing about what is inside.
 */
import { open } from 'node:fs/promises';
import { ArtifactsError } from './errors.js';

export type ArchiveFormat = 'tar.gz' | 'tar' | 'zip';

/** Tells the format from the first bytes (up to 512): gzip, zip (local header or empty-zip EOCD), or ustar. */
export function sniffFormat(head: Buffer): ArchiveFormat | undefined {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
  const magic = head.subarray(0, 4).toString('latin1');
  if (magic === 'PK\x03\x04' || magic === 'PK\x05\x06') return 'zip';
  if (head.length >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
  return undefined;
}

/** Tells the format of `file` from its first bytes; throws ARCHIVE_CORRUPT when it is none we read. */
export async function detectFormat(file: string): Promise<ArchiveFormat> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await handle.read(head, 0, 512, 0);
    const format = sniffFormat(head.subarray(0, bytesRead));
    if (format) return format;
    throw new ArtifactsError('ARCHIVE_CORRUPT', `${file} is neither a tar.gz, a tar nor a zip archive (${bytesRead} bytes)`);
  } finally {
    await handle.close();
  }
}
