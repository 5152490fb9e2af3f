/**
 * What one extraction wrote, so that a failed extraction (a full disk above all) can take it back
 * instead of leaving a half-written tree that fills the disk for every later job.
 *
 * Recorded: every file and link the extraction wrote (new or replacing an old one: the old one is
 * gone either way, and half of a failed archive is nobody's data) and every directory it created.
 * Directories that were there before are never removed, so the checkout around the archive's
 * files survives. Inside a directory the extraction created nothing more is recorded: removing
 * that directory removes it all, so the journal grows with the archive's top-level new paths, not
 * with its entry count.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';

export class WriteJournal {
  /** Paths to remove on rollback, in the order written. */
  private readonly paths: string[] = [];
  /** The recorded directories: anything below one of them needs no entry of its own. */
  private readonly directories = new Set<string>();

  /** `root`: the project dir's real path; nothing above it is ever recorded. */
  constructor(private readonly root: string) {}

  /** Records `path`, about to be written (a file or link) or just created (a directory). */
  wrote(path: string, kind: 'file' | 'directory'): void {
    if (this.covered(path)) return;
    this.paths.push(path);
    if (kind === 'directory') this.directories.add(path);
  }

  /**
   * Removes everything recorded, newest first; best effort (a path already gone is fine). Returns
   * the paths it could not remove.
   */
  rollback(): string[] {
    const left: string[] = [];
    for (const path of this.paths.reverse()) {
      try {
        rmSync(path, { recursive: true, force: true });
      } catch {
        left.push(path);
      }
    }
    this.paths.length = 0;
    this.directories.clear();
    return left;
  }

  private covered(path: string): boolean {
    for (let parent = dirname(path); parent.length > this.root.length; parent = dirname(parent)) {
      if (this.directories.has(parent)) return true;
    }
    return false;
  }
}
