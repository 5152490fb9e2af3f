/**
 * Making a job's directories usable by the job user (global `user`) while the daemon stays root.
 * The user owns the runner's dirs under builds_dir down to the project's parent (get_sources creates
 * and clones the project there); the state dir and its parent stay root's, only traversable (0711), because the
 * daemon writes the trace spool there and a user-owned dir would let a job swap a file for a symlink.
 * The scripts and file variables the job reads are handed over one by one.
 */
import { chmod, lchown, stat } from 'node:fs/promises';
import { dirname, relative, sep, join } from 'node:path';
import type { RunAs } from '../run-as.js';
import { giveToUser } from '../run-as.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { JobDirs } from './build-dir.js';

/**
 * Called once the state dir exists. builds_dir itself is only made traversable (o+x, no listing), never
 * given away: it may be a shared directory (`/home`); the runner's own `<token8>` subtree is the user's.
 */
export async function prepareDirsForUser(runAs: RunAs, buildsDir: string, dirs: JobDirs): Promise<void> {
  const info = await stat(buildsDir);
  if ((info.mode & 0o001) === 0 && info.uid !== runAs.uid) await chmod(buildsDir, (info.mode & 0o7777) | 0o001);
  const steps = relative(buildsDir, dirname(dirs.projectDir)).split(sep).filter(Boolean);
  let path = buildsDir;
  for (const step of steps) {
    path = join(path, step);
    await lchown(path, runAs.uid, runAs.gid);
  }
  await chmod(dirs.tmpDir, 0o711);
  await chmod(dirs.stateDir, 0o711);
}

/** Hands files the daemon wrote for the job (file variables) to the job user. */
export async function giveFilesToUser(runAs: RunAs, paths: string[]): Promise<void> {
  for (const path of paths) await lchown(path, runAs.uid, runAs.gid);
}

/**
 * After get_sources, download_artifacts and restore_cache: the project dir itself (the daemon makes it
 * when there is nothing to fetch) and, when the daemon extracted something into it as root, the whole
 * tree (a walk of the checkout, so only then). Symlinks are not followed.
 */
export async function giveProjectToUser(runAs: RunAs, projectDir: string, extracted: boolean): Promise<void> {
  await giveToUser(runAs, projectDir, extracted);
}

/** Whether the daemon may have extracted artifacts or a cache into this job's project dir. */
export function extractedInto(build: BuildPayload): boolean {
  return Boolean(build.options.cache) || build.depends_on_builds.some((d) => d.artifacts_file);
}
