/**
 * The checkout a runner reuses (GIT_STRATEGY fetch) is one a job could write: a container's root, the
 * job user, or the job itself. Before the runner's git touches it again, its repository metadata is
 * rebuilt from what the runner knows, so nothing a job wrote into `.git` can make that git run a
 * program, or read or write outside the checkout:
 *
 * - the checkout must be a directory and `.git` a directory (not a gitfile naming another repository,
 *   not a symlink), and nothing under `.git` (submodules' git dirs in `.git/modules` included) may be a
 *   symlink, FIFO, socket or device. Otherwise the checkout is emptied and cloned again: a job has
 *   tampered with it, and there is no telling what else it changed.
 * - each git dir's `config` is written anew: format, origin's URL and refspec (submodules get theirs
 *   from `git submodule init/sync`). Whatever a job put there — hooks paths, fsmonitor, filter/diff/merge
 *   drivers, credential helpers, ssh/askpass/proxy commands, includes, core.worktree, submodule
 *   update commands — is gone; HOST_GIT_SETTINGS covers the global and system config's share.
 * - hooks/, info/ (attributes, excludes, grafts, sparse-checkout), objects/info/alternates and
 *   http-alternates, commondir and gitdir (which would make it a worktree of another repository),
 *   worktrees/, config.worktree and stale `*.lock` files are removed.
 *
 * What stays is what git treats as data: objects (verified by their names), refs, the index, shallow.
 * One pass over `.git`'s directories (no stat per file, loose objects not listed), a few unlinks and
 * one small write per git dir: cheap next to the fetch it protects.
 */
import type { Dirent } from 'node:fs';
import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';
import { writeNewFile } from '../util/new-file.js';

export interface CheckoutGuardOptions {
  /** origin's URL (without credentials: they travel in git's environment). */
  originUrl: string;
  /** The commit about to be checked out; its length tells SHA-1 from SHA-256 repositories. */
  sha: string;
  /** Empty the checkout whatever it holds (GIT_STRATEGY clone). */
  fresh?: boolean;
  /** Files the guard writes are given to this uid:gid (the job user, who runs git). */
  owner?: { uid: number; gid: number };
}

export interface CheckoutGuardResult {
  /** `reused`: `.git` stays, metadata rebuilt, fetch into it; `empty`: an empty directory to clone into. */
  state: 'reused' | 'empty';
  /** Why an existing checkout was thrown away (it had been tampered with), for the job log. */
  discarded?: string;
}

/** A loose-object directory's name (the first two hex digits of the objects in it). */
const LOOSE_OBJECTS = /^[0-9a-f]{2}$/;

/** What is removed from every git dir of the checkout (see the module comment). */
const REMOVED = ['hooks', 'info', 'worktrees', 'commondir', 'gitdir', 'config.worktree', join('objects', 'info', 'alternates'), join('objects', 'info', 'http-alternates')];

/**
 * Makes `projectDir` safe for the runner's git: returns `reused` with `.git`'s metadata rebuilt, or
 * `empty` with the directory emptied (created when missing). The caller's parents of `projectDir`
 * must not be writable by a job (the checkout itself may be).
 */
export async function guardCheckout(projectDir: string, options: CheckoutGuardOptions): Promise<CheckoutGuardResult> {
  const info = await lstat(projectDir).catch(missingAsUndefined);
  if (!info) {
    await mkdir(projectDir, { recursive: true });
    return { state: 'empty' };
  }
  if (!info.isDirectory()) {
    await rm(projectDir, { force: true });
    await mkdir(projectDir);
    return { state: 'empty', discarded: `${projectDir} was ${kindOf(info)}, not a directory` };
  }
  if (options.fresh) {
    await emptyDir(projectDir);
    return { state: 'empty' };
  }
  const gitDir = join(projectDir, '.git');
  const scan = await scanGitDir(gitDir);
  if (scan.problem !== undefined) {
    await emptyDir(projectDir);
    return { state: 'empty', ...(scan.problem ? { discarded: scan.problem } : {}) };
  }
  for (const lock of scan.locks) await rm(lock, { force: true });
  const objectFormat = options.sha.length === 64 ? 'sha256' : 'sha1';
  for (const dir of scan.gitDirs) {
    // Only what the scan saw: a removal of what is not there still costs a recursive rm's stat.
    const present = REMOVED.map((name) => join(dir, name)).filter((path) => scan.entries.has(path));
    await Promise.all(present.map((path) => rm(path, { recursive: true, force: true })));
    const text = repositoryConfig(objectFormat, dir === gitDir ? options.originUrl : undefined);
    await writeNewFile(join(dir, 'config'), text, 0o644, { replaceDir: true, ...(options.owner ? { owner: options.owner } : {}) });
  }
  return { state: 'reused' };
}

interface GitDirScan {
  /** undefined: fine; '': no `.git` at all; else what is wrong with it. */
  problem?: string;
  /** `.git` and every submodule git dir under it. */
  gitDirs: string[];
  locks: string[];
  /** Every directory and file the walk listed (not the files of loose-object directories). */
  entries: ReadonlySet<string>;
}

/**
 * One walk of `.git`, symlinks not followed. The files in loose-object directories (`objects/ab/`, up
 * to thousands in a checkout fetched into for long) are not listed: git only reads them, and one that
 * is a link reads as a corrupt object; the directories themselves, which git writes into, are checked.
 */
async function scanGitDir(gitDir: string): Promise<GitDirScan> {
  const none = { gitDirs: [], locks: [], entries: new Set<string>() };
  const info = await lstat(gitDir).catch(missingAsUndefined);
  if (!info) return { ...none, problem: '' };
  if (!info.isDirectory()) return { ...none, problem: `.git was ${kindOf(info)}` };
  const locks: string[] = [];
  const dirs = new Set<string>();
  const files = new Set<string>();
  let level = [gitDir];
  while (level.length > 0) {
    const listed = await Promise.all(level.map(async (dir) => ({ dir, entries: await readdir(dir, { withFileTypes: true }) })));
    level = [];
    for (const { dir, entries } of listed) {
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          dirs.add(path);
          if (!(basename(dir) === 'objects' && LOOSE_OBJECTS.test(entry.name))) level.push(path);
        } else if (entry.isFile()) {
          files.add(path);
          if (entry.name.endsWith('.lock')) locks.push(path);
        } else return { ...none, problem: `.git${sep}${relative(gitDir, path)} was ${direntKind(entry)}` };
      }
    }
  }
  // A submodule's git dir: somewhere below a `modules` dir of a git dir, with HEAD, objects/ and refs/
  // (what git itself asks of a git dir).
  const gitDirs = [gitDir];
  for (const dir of dirs) {
    if (files.has(join(dir, 'HEAD')) && dirs.has(join(dir, 'objects')) && dirs.has(join(dir, 'refs')) && isBelowModules(gitDir, dir)) gitDirs.push(dir);
  }
  return { gitDirs, locks, entries: new Set([...dirs, ...files]) };
}

function isBelowModules(gitDir: string, dir: string): boolean {
  return relative(gitDir, dir).split(sep).slice(0, -1).includes('modules');
}

/** A git dir's whole config: the repository's format and, for the checkout itself, origin. */
export function repositoryConfig(objectFormat: 'sha1' | 'sha256', originUrl: string | undefined): string {
  const lines = ['[core]', `\trepositoryformatversion = ${objectFormat === 'sha256' ? 1 : 0}`, '\tfilemode = true', '\tbare = false', '\tlogallrefupdates = true'];
  if (objectFormat === 'sha256') lines.push('[extensions]', '\tobjectformat = sha256');
  lines.push('[remote "origin"]');
  if (originUrl !== undefined) lines.push(`\turl = ${configValue(originUrl)}`);
  lines.push('\tfetch = +refs/heads/*:refs/remotes/origin/*', '');
  return lines.join('\n');
}

/** A value as git config reads it back literally: as it is when it can be (as git writes it), else in double quotes. */
function configValue(value: string): string {
  if (/[\n\r\0]/.test(value)) throw new Error('a git config value cannot hold a line break or NUL');
  if (/^[^\s;#"\\]([^;#"\\]*[^\s;#"\\])?$/.test(value)) return value;
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Removes everything in `dir` (links themselves, never what they point at), keeping `dir`. */
async function emptyDir(dir: string): Promise<void> {
  for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true, force: true });
}

function missingAsUndefined(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

function kindOf(info: { isSymbolicLink(): boolean; isFile(): boolean; isDirectory(): boolean }): string {
  if (info.isSymbolicLink()) return 'a symlink';
  if (info.isFile()) return 'a file';
  return info.isDirectory() ? 'a directory' : 'a special file';
}

function direntKind(entry: Dirent): string {
  return entry.isSymbolicLink() ? 'a symlink' : 'a special file';
}
