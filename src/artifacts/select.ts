/**
 * Which files go into an artifacts or cache archive (docs/protocol-v1.md §5.4): `paths` (files, directories
 * recursively, globs with `**`) and `untracked` (files git neither tracks nor ignores), relative to
 * the project dir. Nothing outside the project dir is taken: a path that leads out (absolute, `..`,
 * or through a symlinked parent) or a symlink whose target leads out is refused with a line in the
 * trace and skipped. Symlinks inside the project are archived as symlinks, never followed; a walk
 * never descends into a symlinked directory. A symlink the extraction would refuse (an absolute
 * target, `..` after a name, into `.git`: see guard.ts) is skipped the same way, so that one bad
 * link does not make the whole archive unextractable.
 */
import type { Dirent, Stats } from 'node:fs';
import { lstat, readdir, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import { lastLine, runCommand } from '../util/command.js';
import { gitSettingsEnv, HOST_GIT_SETTINGS } from '../git/host-config.js';
import { ArtifactsError } from './errors.js';
import { globBase, GlobError, globMatcher, isGlob } from './glob.js';
import { linkTargetProblem } from './guard.js';
import { trimEndChar } from '../util/text.js';

export interface SelectedEntry {
  /** Forward-slash path relative to the project dir. */
  path: string;
  kind: 'file' | 'directory' | 'symlink';
  /** File size in bytes (0 for directories and symlinks). */
  size: number;
  /** `st_mode` as on disk (type and permission bits). */
  mode: number;
  mtime: Date;
}

export interface SelectionSpec {
  paths?: string[];
  untracked?: boolean;
}

export interface Selection {
  /** Sorted by path; a directory comes before what it contains. */
  entries: SelectedEntry[];
  /** Non-directory entries. */
  files: number;
  /** Sum of file sizes. */
  bytes: number;
}

/** Collects the entries `spec` names under `projectDir`. Problems with single paths are logged, not thrown. */
export async function selectFiles(projectDir: string, spec: SelectionSpec, log: (line: string) => void, signal: AbortSignal): Promise<Selection> {
  const selector = new Selector(await realpath(projectDir), resolve(projectDir), log, signal);
  for (const pattern of spec.paths ?? []) await selector.addPattern(pattern);
  if (spec.untracked) await selector.addUntracked();
  const entries = [...selector.found.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const files = entries.filter((entry) => entry.kind !== 'directory');
  return { entries, files: files.length, bytes: files.reduce((sum, entry) => sum + entry.size, 0) };
}

/**
 * `selection` without the entries `exclude` matches (GitLab's `artifacts:exclude`: globs relative to
 * the project dir, `**` across directories). A matching directory takes what it contains with it;
 * `dir/**` matches what is under `dir`, not `dir` itself (it stays, empty). Returns the new
 * selection and how many files were left out.
 */
export async function excludeEntries(selection: Selection, exclude: readonly string[], signal?: AbortSignal): Promise<{ selection: Selection; excluded: number }> {
  if (exclude.length === 0) return { selection, excluded: 0 };
  const patterns = exclude.map((pattern) => trimEndChar(pattern.replace(/^\.\//, ''), '/'));
  const matchers = patterns.map((pattern) => {
    let isMatch: (path: string) => boolean;
    try {
      isMatch = globMatcher(pattern);
    } catch (error) {
      // Leaving out less than asked could publish what the job meant to keep out.
      if (error instanceof GlobError) throw new ArtifactsError('ARCHIVE_CREATE_FAILED', `artifacts:exclude ${JSON.stringify(pattern.slice(0, 80))}: ${error.message}`);
      throw error;
    }
    const under = pattern.endsWith('/**') ? pattern.slice(0, -3) : undefined;
    return (path: string): boolean => path !== under && isMatch(path);
  });
  const matches = (path: string): boolean => matchers.some((isMatch) => isMatch(path));
  const excludedDirs: string[] = [];
  const entries: SelectedEntry[] = [];
  for (const [index, entry] of selection.entries.entries()) {
    // A match is bounded, not free: many files give the event loop its turn now and then.
    if (index % YIELD_EVERY === YIELD_EVERY - 1) await yieldTurn(signal);
    if (excludedDirs.some((dir) => entry.path.startsWith(`${dir}/`))) continue;
    if (!matches(entry.path)) {
      entries.push(entry);
      continue;
    }
    if (entry.kind === 'directory') excludedDirs.push(entry.path);
  }
  const files = entries.filter((entry) => entry.kind !== 'directory');
  return {
    selection: { entries, files: files.length, bytes: files.reduce((sum, entry) => sum + entry.size, 0) },
    excluded: selection.files - files.length,
  };
}

/** Paths matched between two turns of the event loop. */
const YIELD_EVERY = 256;

async function yieldTurn(signal: AbortSignal | undefined): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  signal?.throwIfAborted();
}

/**
 * The daemon lists untracked files in a checkout the job has just written, often as root: git gets the
 * host settings (no fsmonitor, no hooks: nothing the job's `.git` names runs; the paths it prints are
 * checked like any other), and is told the checkout's owner (a job user, a container's) is fine.
 */
const lsFilesEnv = (): Record<string, string> => gitSettingsEnv([...HOST_GIT_SETTINGS, ['safe.directory', '*']]);

class Selector {
  readonly found = new Map<string, SelectedEntry>();

  constructor(
    private readonly root: string,
    private readonly lexicalRoot: string,
    private readonly log: (line: string) => void,
    private readonly signal: AbortSignal,
  ) {}

  async addPattern(pattern: string): Promise<void> {
    const relativePattern = this.relativeToRoot(pattern);
    if (relativePattern === undefined) {
      this.log(`WARNING: refusing path ${JSON.stringify(pattern)}: it is outside the project dir`);
      return;
    }
    if (!isGlob(relativePattern)) {
      if (!(await this.add(relativePattern, pattern))) this.log(`WARNING: ${pattern}: no matching files`);
      return;
    }
    const scanBase = globBase(relativePattern);
    const base = scanBase === '' ? '' : posix.normalize(scanBase);
    let matches: (path: string) => boolean;
    try {
      matches = globMatcher(relativePattern);
    } catch (error) {
      if (!(error instanceof GlobError)) throw error;
      this.log(`WARNING: refusing path ${JSON.stringify(pattern.slice(0, 80))}: ${error.message}`);
      return;
    }
    const before = this.found.size;
    await this.walkForGlob(base, matches, relativePattern.startsWith('.git'));
    if (this.found.size === before) this.log(`WARNING: ${pattern}: no matching files`);
  }

  async addUntracked(): Promise<void> {
    const result = await runCommand('git', ['ls-files', '-o', '--exclude-standard', '-z'], { cwd: this.root, env: lsFilesEnv(), signal: this.signal, maxBuffer: 100 * 1024 * 1024 });
    if (this.signal.aborted) throw this.signal.reason;
    if (result.failed) {
      this.log(`WARNING: could not list untracked files (git ls-files failed: ${lastLine(result.stderr) || result.shortMessage})`);
      return;
    }
    for (const path of result.stdout.split('\0')) {
      if (path !== '') await this.add(path.replace(/\/$/, ''), path);
    }
  }

  /** Adds one root-relative path (recursively for a directory). Returns false when it does not exist. */
  private async add(path: string, shown: string): Promise<boolean> {
    if (this.signal.aborted) throw this.signal.reason;
    if (path !== '' && !(await this.parentStaysInside(path))) {
      this.log(`WARNING: refusing ${JSON.stringify(shown)}: it leads outside the project dir through a symlinked directory`);
      return true;
    }
    const absolute = join(this.root, path);
    let stats: Stats;
    try {
      stats = await lstat(absolute);
    } catch {
      return false;
    }
    await this.addExisting(path, absolute, stats);
    return true;
  }

  private async addExisting(path: string, absolute: string, stats: Stats): Promise<void> {
    if (this.found.has(path)) return;
    if (stats.isSymbolicLink()) {
      const target = await readlink(absolute);
      if (!(await this.linkStaysInside(absolute, target))) {
        this.log(`WARNING: refusing symlink ${path} -> ${target}: its target is outside the project dir`);
        return;
      }
      const problem = await this.unextractable(absolute, target);
      if (problem) {
        this.log(`WARNING: refusing symlink ${path} -> ${target}: ${problem}; extracting an archive with it would be refused`);
        return;
      }
      this.found.set(path, entry(path, 'symlink', stats));
    } else if (stats.isFile()) {
      this.found.set(path, entry(path, 'file', stats));
    } else if (stats.isDirectory()) {
      // The project dir itself ('' — from "." or "**") has no entry of its own, and its .git stays out.
      if (path !== '') this.found.set(path, entry(path, 'directory', stats));
      for (const child of await this.list(absolute)) {
        if (path === '' && child.name === '.git') continue;
        const childPath = path === '' ? child.name : `${path}/${child.name}`;
        await this.addExisting(childPath, join(absolute, child.name), await lstat(join(absolute, child.name)));
      }
    } else {
      this.log(`WARNING: skipping ${path}: not a regular file, directory or symlink`);
    }
  }

  private async walkForGlob(dir: string, matches: (path: string) => boolean, intoGit: boolean): Promise<void> {
    const absolute = join(this.root, dir);
    if (dir !== '' && !(await this.parentStaysInside(`${dir}/x`))) return;
    for (const [index, child] of (await this.list(absolute)).entries()) {
      if (index % YIELD_EVERY === YIELD_EVERY - 1) await yieldTurn(this.signal);
      if (this.signal.aborted) throw this.signal.reason;
      const path = dir === '' ? child.name : `${dir}/${child.name}`;
      if (path === '.git' && !intoGit) continue;
      if (matches(path)) {
        await this.addExisting(path, join(absolute, child.name), await lstat(join(absolute, child.name)));
      } else if (child.isDirectory()) {
        await this.walkForGlob(path, matches, intoGit);
      }
    }
  }

  private async list(absolute: string): Promise<Dirent[]> {
    try {
      return (await readdir(absolute, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    } catch {
      return [];
    }
  }

  /** The pattern relative to the root, or undefined when it leads out of the project dir. */
  private relativeToRoot(pattern: string): string | undefined {
    const trimmed = pattern.trim();
    let path = trimmed;
    if (isAbsolute(trimmed)) {
      const inside = [this.root, this.lexicalRoot].map((root) => relative(root, trimmed)).find((rel) => !rel.startsWith('..') && !isAbsolute(rel));
      if (inside === undefined) return undefined;
      path = inside;
    }
    const normal = trimEndChar(posix.normalize(path.split(sep).join('/')), '/');
    if (normal === '..' || normal.startsWith('../')) return undefined;
    return normal === '.' ? '' : normal.replace(/^\.\//, '');
  }

  private async parentStaysInside(path: string): Promise<boolean> {
    try {
      return this.isInside(await realpath(dirname(join(this.root, path))));
    } catch {
      return true; // a missing parent: nothing to take from there anyway
    }
  }

  private async linkStaysInside(absolute: string, target: string): Promise<boolean> {
    const candidate = resolve(dirname(absolute), target);
    try {
      return this.isInside(await realpath(candidate));
    } catch {
      return this.isInside(candidate); // dangling: judge the name itself
    }
  }

  /** What the extraction guard (guard.ts) would refuse in a link that stays inside: the archive must stay extractable. */
  private async unextractable(absolute: string, target: string): Promise<string | undefined> {
    if (isAbsolute(target)) return 'its target is an absolute path (make it relative)';
    const problem = linkTargetProblem(target);
    if (problem) return problem;
    const real = await realpath(resolve(dirname(absolute), target)).catch(() => undefined);
    const git = join(this.root, '.git');
    if (real !== undefined && (real === git || real.startsWith(`${git}${sep}`))) return "it leads into the project's .git directory";
    return undefined;
  }

  private isInside(path: string): boolean {
    return [this.root, this.lexicalRoot].some((root) => path === root || path.startsWith(`${root}${sep}`));
  }
}

function entry(path: string, kind: SelectedEntry['kind'], stats: Stats): SelectedEntry {
  return { path, kind, size: kind === 'file' ? stats.size : 0, mode: stats.mode, mtime: stats.mtime };
}
