/**
 * The extraction guard: works out where an archive entry would really land — following symlinks the
 * way the kernel will when the entry is written — and refuses any entry that would land, or point,
 * outside the project dir. It follows both the symlinks already on disk and the ones the archive
 * itself creates earlier (see layout.ts), so a validation pass over the whole archive can refuse it
 * before a single byte is written. Where a symlink leads is judged against the layout the whole
 * archive leaves (`finish`), since a later entry can change it (a directory the link goes through
 * replaced by a symlink, say, or a link of the previous job's replaced by a directory).
 *
 * Rules (hostile input): no absolute names, no `..` components, no NUL; symlinks must be relative,
 * may have `..` only at the start of their target (after a name, `..` leads wherever that name
 * turns out to lead, which a later entry or a later archive can change), must not name `.git`, and
 * must resolve (relative to the link's own directory, through any further links) inside the project
 * and outside its `.git` once the archive is done; hard links must name a
 * regular file inside the project (tar link names are relative to the archive root), never a
 * symlink (a hard link to a symlink would carry its relative target somewhere else) and nothing in
 * `.git`; device files, fifos and sockets are refused; nothing may land in the project's `.git`
 * (hooks and config there run code); an entry may not go below a file an earlier entry made (the
 * archive contradicts itself; a file left on disk by an earlier job is replaced by the directory
 * instead, as an explicit directory entry would replace it). The last component of an entry is
 * never followed: the writer replaces whatever is there instead of writing through it.
 *
 * Symlinks already on disk are the project's own: they are followed when a path goes through them
 * (and refused then if that leads out), and judged again at the end when a walk went through them.
 */
import { posix } from 'node:path';
import { ArtifactsError } from './errors.js';
import { Layout, type LayoutNode, type Step, type WalkResult } from './layout.js';

export type EntryKind = 'file' | 'directory' | 'symlink' | 'hardlink' | 'unsupported';

/** What the guard needs to know about an entry. */
export interface EntryHeader {
  /** The name as stored in the archive. */
  name: string;
  kind: EntryKind;
  /** Symlink target, or hard link target (relative to the archive root). */
  linkTarget?: string;
  /** For `unsupported`: what it is ("character device"). */
  detail?: string;
}

/** Where an entry goes, relative to the project root, with every parent symlink resolved. */
export interface Placement {
  location: string;
  /** For hard links: the resolved location of the file linked to. */
  linkLocation?: string;
}

/** Linux's limits on one path component and on a whole path (also a symlink's target), in bytes. */
const NAME_MAX = 255;
const PATH_MAX = 4095;

export interface GuardOptions {
  /** The project dir's real path (symlinks resolved). */
  root: string;
  /** The project dir as configured, for absolute on-disk symlinks that name it that way. */
  lexicalRoot?: string;
  /**
   * `plan`: nothing is written while the guard runs; entries are tracked in a virtual layout and
   * disk lookups are cached. `live`: the disk changes as entries are written; always ask the disk.
   */
  mode: 'plan' | 'live';
}

/** A symlink that leads where it must not once the archive is extracted. */
export interface BadLink {
  /** Root-relative location of the link. */
  location: string;
  error: ArtifactsError;
}

export class ExtractionGuard {
  private readonly layout: Layout;
  /** Live mode: where the archive's symlinks were placed, to judge them again at the end. */
  private readonly placedLinks: Array<{ location: string; entry: string }> = [];

  constructor(private readonly options: GuardOptions) {
    const roots = [options.root, options.lexicalRoot].filter((r): r is string => Boolean(r)).map((r) => posix.normalize(r).replace(/(.)\/+$/, '$1'));
    this.layout = new Layout(options.root, roots, options.mode === 'plan');
  }

  /**
   * Decides where `entry` goes. Returns undefined for entries to skip silently (the root directory
   * itself, e.g. `./`). Throws ArtifactsError `ARCHIVE_UNSAFE` naming the entry and the reason.
   */
  place(entry: EntryHeader): Placement | undefined {
    if (entry.kind === 'unsupported') {
      throw unsafe(entry.name, `is a ${entry.detail ?? 'special file'}; only files, directories and links are extracted`);
    }
    const parts = archiveName(entry.name);
    if (parts.length === 0) {
      if (entry.kind === 'directory') return undefined;
      throw unsafe(entry.name, 'has no file name');
    }
    const steps = this.walk(entry.name, parts, [], false, 'would be written');
    if (steps[0]?.name === '.git') {
      // Inside the project, but git runs hooks and honours config from there: an artifact that
      // writes .git/hooks/* would run code in the next job's checkout.
      throw unsafe(entry.name, "would be written into the project's .git directory");
    }
    const location = locationOf(steps);
    this.refuseLongNames(entry.name, steps, location);
    const parents = steps.slice(0, -1);
    const last = steps[steps.length - 1] as Step;
    this.refuseConflicts(entry.name, parents);
    if (entry.kind === 'symlink') refuseLinkText(entry.name, entry.linkTarget ?? '');
    const dir = this.makeParents(entry.name, parents);
    switch (entry.kind) {
      case 'directory':
        if (last.node?.kind !== 'directory') this.layout.put(dir, last.name, 'directory', entry.name);
        return { location };
      case 'file':
        this.layout.put(dir, last.name, 'file', entry.name);
        return { location };
      case 'symlink': {
        const target = entry.linkTarget ?? '';
        this.layout.put(dir, last.name, 'symlink', entry.name, target);
        if (!this.layout.cache) this.placedLinks.push({ location, entry: entry.name });
        // Where the link leads through other links is judged once the archive is done (`badLinks`):
        // until then a later entry may still change it, and nothing is written through a link without
        // a walk of its own. Climbing above the project dir depends on the link's own place alone.
        if (leadingUps(target) > parents.length) throw unsafe(entry.name, `is a symlink to ${target}, which leads outside the project dir`);
        return { location };
      }
      case 'hardlink': {
        // The writer removes what stands at the location before it links: a target there is gone by then.
        this.layout.remove(dir, last.name);
        const linkLocation = this.hardLinkTarget(entry);
        this.layout.put(dir, last.name, 'file', entry.name);
        return { location, linkLocation };
      }
    }
  }

  /**
   * Every symlink judged against the layout the whole archive leaves: the archive's own links and
   * the links on disk its paths went through. Plan mode: in the virtual layout; live mode: the
   * archive's links, on the disk as extraction left it. Returns the links that lead out of the
   * project dir or into its `.git`.
   */
  badLinks(): BadLink[] {
    const bad: BadLink[] = [];
    if (this.layout.cache) {
      for (const { node, parent } of this.layout.symlinks()) {
        const error = this.judgeLink(parent, node.target ?? '', linkDescription(node));
        if (error) bad.push({ location: node.path, error });
      }
      return bad;
    }
    for (const { location, entry } of this.placedLinks) {
      const walked = this.layout.walk(location.split('/'), [], false);
      const node = walked.ok ? walked.steps[walked.steps.length - 1]?.node : undefined;
      if (!walked.ok || node?.kind !== 'symlink') continue;
      const error = this.judgeLink(walked.steps.slice(0, -1), node.target ?? '', `entry ${JSON.stringify(entry)} is a symlink to ${node.target ?? ''}, which leads`);
      if (error) bad.push({ location, error });
    }
    return bad;
  }

  /** Plan mode, after the last entry: throws the first link `badLinks` reports. */
  finish(): void {
    const [first] = this.badLinks();
    if (first) throw first.error;
  }

  /** Walks an entry's name or link target; throws ARCHIVE_UNSAFE when it leads outside. */
  private walk(name: string, parts: string[], start: Step[], followLast: boolean, what: string): Step[] {
    const walked = this.layout.walk(parts, start, followLast);
    if (!walked.ok) throw walkError(`entry ${JSON.stringify(name)} ${what}`, walked);
    return walked.steps;
  }

  /** Where a symlink with `target` in the directory `parent` leads, as an error when that is out or into .git. */
  private judgeLink(parent: Step[], target: string, subject: string): ArtifactsError | undefined {
    const walked = this.layout.walk(target.split('/'), parent, true);
    if (!walked.ok) return walkError(subject, walked);
    if (walked.steps[0]?.name === '.git') return new ArtifactsError('ARCHIVE_UNSAFE', `${subject} into the project's .git directory`);
    return undefined;
  }

  /** Names the kernel would refuse (ENAMETOOLONG) would fail the writer half-way: they are refused here instead. */
  private refuseLongNames(name: string, steps: Step[], location: string): void {
    const long = steps.find((step) => Buffer.byteLength(step.name) > NAME_MAX);
    if (long) throw unsafe(name, `has a path component longer than ${NAME_MAX} bytes (${long.name.slice(0, 40)}...)`);
    const bytes = Buffer.byteLength(this.options.root) + 1 + Buffer.byteLength(location);
    if (bytes > PATH_MAX) throw unsafe(name, `would be written at a path of ${bytes} bytes, longer than the ${PATH_MAX} the system takes`);
  }

  /** An entry below a file (or fifo...) that an earlier entry of this archive made: the archive contradicts itself. */
  private refuseConflicts(name: string, parents: Step[]): void {
    for (const step of parents) {
      const node = step.node;
      if (node && node.kind !== 'directory' && node.entry !== undefined) {
        throw unsafe(name, `needs ${node.path} to be a directory, but entry ${JSON.stringify(node.entry)} made it a ${node.kind === 'symlink' ? 'symlink' : 'file'}`);
      }
    }
  }

  /** Plan mode: the parent directories the writer will create (replacing a file left on disk there). Returns the entry's directory. */
  private makeParents(name: string, parents: Step[]): LayoutNode {
    let dir = this.layout.root;
    for (const step of parents) {
      if (step.node?.kind !== 'directory') step.node = this.layout.put(dir, step.name, 'directory', name);
      dir = step.node;
    }
    return dir;
  }

  private hardLinkTarget(entry: EntryHeader): string {
    const target = entry.linkTarget ?? '';
    const steps = this.walk(entry.name, archiveName(target, entry.name, 'hard link target'), [], false, `is a hard link to ${target}, which leads`);
    if (steps[0]?.name === '.git') throw unsafe(entry.name, `is a hard link to ${target}, which is in the project's .git directory`);
    if (steps[steps.length - 1]?.node?.kind !== 'file') {
      throw unsafe(entry.name, `is a hard link to ${target}, which is not a regular file inside the project`);
    }
    return locationOf(steps);
  }
}

/**
 * Why a relative symlink target cannot be extracted whatever the layout, judged on its text alone:
 * undefined when it can. The runner also leaves such links out of the archives it makes, so that
 * what it uploads it can extract.
 */
export function linkTargetProblem(target: string): string | undefined {
  const parts = target.split('/').filter((part) => part !== '' && part !== '.');
  const firstName = parts.findIndex((part) => part !== '..');
  if (firstName >= 0 && parts.slice(firstName).includes('..')) {
    return '".." follows a name in it, so where it leads depends on what that name turns out to be, which a later entry or archive can change (".." may only start a link target)';
  }
  if (parts.includes('.git')) return 'it goes into a .git directory';
  return undefined;
}

function refuseLinkText(name: string, target: string): void {
  if (target === '' || target.includes('\0')) throw unsafe(name, 'is a symlink without a valid target');
  if (target.startsWith('/')) throw unsafe(name, `is a symlink to the absolute path ${target}`);
  if (Buffer.byteLength(target) > PATH_MAX) throw unsafe(name, `is a symlink with a target longer than ${PATH_MAX} bytes`);
  const problem = linkTargetProblem(target);
  if (problem) throw unsafe(name, `is a symlink to ${target}: ${problem}`);
}

/**
 * Splits an archive name into components, refusing absolute names, `..` and NUL. `./` and empty
 * components are dropped, so `./a//b/` is `['a', 'b']`.
 */
export function archiveName(raw: string, entryName = raw, what = 'name'): string[] {
  if (raw.includes('\0')) throw unsafe(entryName, `has a NUL byte in its ${what}`);
  if (raw.startsWith('/') || /^[A-Za-z]:[\\/]/.test(raw)) throw unsafe(entryName, `has an absolute ${what} (${raw})`);
  const parts = raw.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw unsafe(entryName, `has a ".." component in its ${what} (${raw})`);
  return parts;
}

function leadingUps(target: string): number {
  const parts = target.split('/').filter((part) => part !== '' && part !== '.');
  const firstName = parts.findIndex((part) => part !== '..');
  return firstName < 0 ? parts.length : firstName;
}

function locationOf(steps: Step[]): string {
  return steps.map((step) => step.name).join('/');
}

function linkDescription(node: LayoutNode): string {
  if (node.entry !== undefined) return `entry ${JSON.stringify(node.entry)} is a symlink to ${node.target ?? ''}, which once the whole archive is extracted leads`;
  return `the symlink ${node.path} -> ${node.target ?? ''} already in the project dir would, once the archive is extracted, lead`;
}

function walkError(subject: string, walked: Exclude<WalkResult, { ok: true }>): ArtifactsError {
  if (walked.problem === 'loop') return new ArtifactsError('ARCHIVE_UNSAFE', `${subject} through too many symlinks`);
  const via = walked.via ? ` (through the symlink ${walked.via})` : '';
  return new ArtifactsError('ARCHIVE_UNSAFE', `${subject} outside the project dir${via}`);
}

function unsafe(name: string, reason: string): ArtifactsError {
  return new ArtifactsError('ARCHIVE_UNSAFE', `entry ${JSON.stringify(name)} ${reason}`);
}
