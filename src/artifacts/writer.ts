/**
 * Writes validated archive entries under the project root. Whatever already sits at an entry's
 * location (or where it needs a parent directory) is replaced, never written through: files are
 * created with O_EXCL after the old entry is removed, so a symlink planted there cannot redirect the
 * write. Modes are kept without the
 * setuid/setgid/sticky bits; directories always stay owner-writable so later entries can go in.
 *
 * Metadata calls (mkdir, lstat, chmod, utimes, link) and small files are done synchronously: each
 * takes microseconds, while a trip through libuv's thread pool per call made extracting many small
 * files several times slower than GNU tar. Large files stream asynchronously with backpressure.
 */
import { chmodSync, closeSync, createWriteStream, fchmodSync, futimesSync, linkSync, lstatSync, mkdirSync, openSync, rmSync, symlinkSync, utimesSync, writeSync, type Stats } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ArchiveEntry } from './entry.js';
import { ArtifactsError } from './errors.js';
import type { Placement } from './guard.js';
import type { WriteJournal } from './journal.js';

/** Files up to this size are read into memory and written in one synchronous call. */
const SMALL_FILE = 256 * 1024;

export class EntryWriter {
  /** Directories known to exist (created or seen) during this extraction. */
  private readonly directories = new Set<string>();

  /** `journal` (optional) records what is written, for a rollback when the extraction fails. */
  constructor(
    private readonly root: string,
    private readonly signal: AbortSignal,
    private readonly journal?: WriteJournal,
  ) {}

  /** Writes `entry` at `placement` (from the guard). Throws ARCHIVE_EXTRACT_FAILED or the abort reason. */
  async write(placement: Placement, entry: ArchiveEntry): Promise<void> {
    const target = join(this.root, placement.location);
    try {
      this.ensureDirectory(dirname(target));
      // A small file is created with O_EXCL at once and looks for what is in its way only when that
      // fails: most targets are new, so this saves an lstat per file.
      const existing = entry.kind === 'file' && entry.size <= SMALL_FILE ? undefined : lstatOrUndefined(target);
      if (entry.kind === 'directory') {
        if (!existing?.isDirectory()) {
          if (existing) rmSync(target, { force: true });
          mkdirSync(target);
          this.journal?.wrote(target, 'directory');
        }
        chmodSync(target, directoryMode(entry.mode));
        this.directories.add(target);
        return;
      }
      if (existing) this.remove(target, existing);
      this.journal?.wrote(target, 'file');
      switch (entry.kind) {
        case 'file':
          await this.writeFile(target, entry);
          return;
        case 'symlink':
          symlinkSync(entry.linkTarget ?? '', target);
          return;
        case 'hardlink':
          linkSync(join(this.root, placement.linkLocation ?? ''), target);
          return;
        default:
          return;
      }
    } catch (error) {
      if (this.signal.aborted) throw this.signal.reason;
      if (error instanceof ArtifactsError) throw error;
      throw new ArtifactsError('ARCHIVE_EXTRACT_FAILED', `could not write ${placement.location}: ${(error as Error).message}`, { cause: error });
    }
  }

  private async writeFile(target: string, entry: ArchiveEntry): Promise<void> {
    const content = entry.content ? await entry.content() : [];
    if (entry.size > SMALL_FILE) {
      // A large buffer lets the stream gather the decompressor's small pieces into one writev.
      await pipeline(content, createWriteStream(target, { flags: 'wx', mode: 0o600, highWaterMark: 1024 * 1024 }), { signal: this.signal });
      chmodSync(target, fileMode(entry.mode));
      if (entry.mtime) utimesSync(target, entry.mtime, entry.mtime);
      return;
    }
    const chunks: Uint8Array[] = [];
    for await (const chunk of content) chunks.push(chunk);
    if (this.signal.aborted) throw this.signal.reason;
    const data = Buffer.concat(chunks);
    const fd = this.createExclusive(target);
    try {
      for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
      fchmodSync(fd, fileMode(entry.mode));
      if (entry.mtime) futimesSync(fd, entry.mtime, entry.mtime);
    } finally {
      closeSync(fd);
    }
  }

  /** Opens a new file at `target` with O_EXCL (never through a link); whatever is there is removed first. */
  private createExclusive(target: string): number {
    try {
      return openSync(target, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const existing = lstatOrUndefined(target);
    if (existing) this.remove(target, existing);
    return openSync(target, 'wx', 0o600);
  }

  private remove(target: string, existing: Stats): void {
    rmSync(target, { force: true, recursive: existing.isDirectory() });
    this.forgetDirectories(target);
  }

  private ensureDirectory(path: string): void {
    if (this.directories.has(path)) return;
    try {
      const created = mkdirSync(path, { recursive: true });
      if (created !== undefined) this.journal?.wrote(created, 'directory');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTDIR') throw error;
      this.replaceNonDirectories(path);
    }
    this.directories.add(path);
  }

  /**
   * A file (left by an earlier job) stands where the entry needs a directory: it is replaced by one,
   * as a directory entry would replace it and as the guard planned. A symlink there was not planned
   * (the guard resolved every parent link): that is an error, never followed.
   */
  private replaceNonDirectories(path: string): void {
    let current = this.root;
    for (const part of relative(this.root, path).split(sep)) {
      current = join(current, part);
      const existing = lstatOrUndefined(current);
      if (existing?.isDirectory()) continue;
      if (existing?.isSymbolicLink()) throw new Error(`${current} is a symlink where a directory was expected`);
      if (existing) this.remove(current, existing);
      mkdirSync(current);
      this.journal?.wrote(current, 'directory');
    }
  }

  private forgetDirectories(path: string): void {
    for (const known of this.directories) {
      if (known === path || known.startsWith(`${path}/`)) this.directories.delete(known);
    }
  }
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function fileMode(mode: number): number {
  return (mode & 0o777) || 0o644;
}

function directoryMode(mode: number): number {
  return ((mode & 0o777) || 0o755) | 0o700;
}
