/**
 * A job user (global `user`) next to a root daemon. The job user owns one directory: the project dir
 * (its checkout), and only while one of its stages runs there. Everything above it under builds_dir
 * (`<token8>/<slot>/<namespace…>`) and the `<project>.tmp` state dirs beside it stay the daemon's,
 * traversable but not writable (0711), so a job can never swap a directory the daemon later writes
 * for a link. While the daemon itself works in the checkout (rebuilding `.git` before get_sources,
 * extracting artifacts and the cache, archiving them after the job) the project dir is the daemon's
 * and closed (0700): no process of the job user can reach in to swap a file or directory for a link
 * between the daemon's check and its use. Processes the job left behind are gone by then (cgroup,
 * else process group and marker sweep); one still inside (user-processes.ts) makes the take fail.
 */
import { constants } from 'node:fs';
import { chmod, mkdir, open, rm, stat, lchown, type FileHandle } from 'node:fs/promises';
import { dirname, relative, sep, join } from 'node:path';
import type { RunAs } from '../../executors/run-as.js';
import { giveToUser } from '../../executors/run-as.js';
import type { BuildPayload } from '../../protocol/types.js';
import { CiRunnerError } from '../../util/errors.js';
import type { JobDirs } from './build-dir.js';
import { processesInside } from './user-processes.js';

const DIR_NO_FOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Makes the runner's dirs of a job ready before anything is written in them: builds_dir traversable
 * (o+x, never given away: it may be a shared directory such as `/home`), every dir from `<token8>` down
 * to the project's parent, `<project>.tmp` and the state dir the daemon's with mode 0711. A link or
 * file where one of them belongs (left there when older versions gave these dirs to the job user) is
 * removed and the dir made afresh.
 */
export async function prepareDirsForUser(runAs: RunAs, buildsDir: string, dirs: JobDirs): Promise<void> {
  await mkdir(buildsDir, { recursive: true });
  const info = await stat(buildsDir);
  if ((info.mode & 0o001) === 0 && info.uid !== runAs.uid) await chmod(buildsDir, (info.mode & 0o7777) | 0o001);
  const steps = relative(buildsDir, dirname(dirs.projectDir)).split(sep).filter(Boolean);
  let path = buildsDir;
  for (const step of steps) {
    path = join(path, step);
    await claimDir(path, 0o711);
  }
  await claimDir(dirs.tmpDir, 0o711);
  await claimDir(dirs.stateDir, 0o711);
}

/** A process of the job user is still inside the checkout the daemon is taking back. */
export class JobProcessInCheckoutError extends CiRunnerError {
  constructor(projectDir: string, pids: number[]) {
    super('JOB_PROCESS_IN_CHECKOUT', `process${pids.length === 1 ? '' : 'es'} ${pids.join(', ')} of the job user still work${pids.length === 1 ? 's' : ''} inside ${projectDir}; the runner does not touch a checkout a job process can reach into (contain jobs in a cgroup, or end what they leave running)`);
  }
}

/**
 * The project dir becomes the daemon's and closed to others (made when missing); see the module
 * comment. Refused (after closing it) while a process of `runAs` is still inside it.
 */
export async function takeProject(projectDir: string, runAs: RunAs): Promise<void> {
  await claimDir(projectDir, 0o700);
  // After the close: from here nobody enters, so whoever is inside is found.
  const pids = await processesInside(runAs.uid, projectDir);
  if (pids.length > 0) throw new JobProcessInCheckoutError(projectDir, pids);
}

/**
 * The project dir becomes the job user's again, and with `recursive` everything in it (after the
 * daemon extracted artifacts or a cache into it as root: a walk of the checkout, so only then).
 * Symlinks are not followed.
 */
export async function giveProjectToUser(runAs: RunAs, projectDir: string, recursive: boolean): Promise<void> {
  await giveToUser(runAs, projectDir, recursive);
}

/** Hands files the daemon wrote for the job (file variables, TLS files) to the job user. */
export async function giveFilesToUser(runAs: RunAs, paths: string[]): Promise<void> {
  for (const path of paths) await lchown(path, runAs.uid, runAs.gid);
}

/** Whether the daemon may have extracted artifacts or a cache into this job's project dir. */
export function extractedInto(build: BuildPayload): boolean {
  return Boolean(build.options.cache) || build.depends_on_builds.some((d) => d.artifacts_file);
}

/**
 * Makes `path` a real directory owned by this process with `mode`, whatever was there: a symlink or a
 * file is removed (the link itself, never its target), a missing dir made. Ownership and mode are
 * set through the open directory, not the path.
 */
async function claimDir(path: string, mode: number): Promise<void> {
  const handle = await openDir(path);
  try {
    const info = await handle.stat();
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    if (info.uid !== uid || info.gid !== gid) await handle.chown(uid, gid);
    if ((info.mode & 0o7777) !== mode) await handle.chmod(mode);
  } finally {
    await handle.close();
  }
}

async function openDir(path: string): Promise<FileHandle> {
  try {
    return await open(path, DIR_NO_FOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') await rm(path, { force: true });
    else if (code !== 'ENOENT') throw error;
  }
  // Made without group or other bits; claimDir sets the mode it wants through the handle.
  await mkdir(path, { mode: 0o700 });
  return open(path, DIR_NO_FOLLOW);
}
