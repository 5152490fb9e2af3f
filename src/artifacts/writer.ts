/**
 * Writes one validated archive entry under the project root. Whatever already sits at the entry's
 * location is replaced, never written through: files are created with O_EXCL after the old entry is
 * removed, so a symlink planted there cannot redirect the write. Modes are kept without the
 * setuid/setgid/sticky bits; directories always stay owner-writable so later entries can go in.
 */
import { createWriteStream } from 'node:fs';
import { chmod, link, lstat, mkdir, rm, symlink, utimes } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ArchiveEntry } from './entry.js';
import { ArtifactsError } from './errors.js';
import type { Placement } from './guard.js';

/** Writes `entry` at `placement` (from the guard) under `root`. Throws ARCHIVE_EXTRACT_FAILED or the abort reason. */
export async function writeEntry(root: string, placement: Placement, entry: ArchiveEntry, signal: AbortSignal): Promise<void> {
  const target = join(root, placement.location);
  try {
    await mkdir(dirname(target), { recursive: true });
    const existing = await lstat(target).catch(() => undefined);
    if (entry.kind === 'directory') {
      if (!existing?.isDirectory()) {
        if (existing) await rm(target, { force: true });
        await mkdir(target);
      }
      await chmod(target, directoryMode(entry.mode));
      return;
    }
    if (existing) await rm(target, { force: true, recursive: existing.isDirectory() });
    switch (entry.kind) {
      case 'file': {
        const content = entry.content ? await entry.content() : [];
        await pipeline(content, createWriteStream(target, { flags: 'wx', mode: 0o600 }), { signal });
        await chmod(target, fileMode(entry.mode));
        if (entry.mtime) await utimes(target, entry.mtime, entry.mtime);
        return;
      }
      case 'symlink':
        await symlink(entry.linkTarget ?? '', target);
        return;
      case 'hardlink':
        await link(join(root, placement.linkLocation ?? ''), target);
        return;
      default:
        return;
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof ArtifactsError) throw error;
    throw new ArtifactsError('ARCHIVE_EXTRACT_FAILED', `could not write ${placement.location}: ${(error as Error).message}`, { cause: error });
  }
}

function fileMode(mode: number): number {
  return (mode & 0o777) || 0o644;
}

function directoryMode(mode: number): number {
  return ((mode & 0o777) || 0o755) | 0o700;
}
