/**
 * The extraction guard: works out where an archive entry would really land — following symlinks the
 * way the kernel will when the entry is written — and refuses any entry that would land, or point,
 * outside the project dir. It follows both the symlinks already on disk and the ones the archive
 * itself creates earlier (a virtual view), so a validation pass over the whole archive can refuse it
 * before a single byte is written.
 *
 * Rules (hostile input): no absolute names, no `..` components, no NUL; symlinks must be relative and
 * must resolve (relative to the link's own directory, through any further links) inside the project;
 * hard links must name a regular file inside the project (tar link names are relative to the archive
 * root) and never a symlink (a hard link to a symlink would carry its relative target somewhere
 * else); device files, fifos and sockets are refused; nothing may land in the project's `.git`
 * (hooks and config there run code). The last component of an entry is never
 * followed: the writer replaces whatever is there instead of writing through it.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { posix } from 'node:path';
import { ArtifactsError } from './errors.js';

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

type NodeKind = { kind: 'symlink'; target: string } | { kind: 'file' | 'directory' | 'missing' | 'other' };

const MAX_SYMLINK_HOPS = 40;

export interface GuardOptions {
  /** The project dir's real path (symlinks resolved). */
  root: string;
  /** The project dir as configured, for absolute on-disk symlinks that name it that way. */
  lexicalRoot?: string;
  /**
   * `plan`: nothing is written while the guard runs; entries are tracked virtually and disk lookups
   * are cached. `live`: the disk changes as entries are written; always ask the disk.
   */
  mode: 'plan' | 'live';
}

export class ExtractionGuard {
  private readonly virtual = new Map<string, NodeKind>();
  private readonly disk = new Map<string, NodeKind>();
  private readonly roots: string[];

  constructor(private readonly options: GuardOptions) {
    this.roots = [options.root, options.lexicalRoot].filter((r): r is string => Boolean(r)).map((r) => posix.normalize(r));
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
    const location = this.resolve(entry.name, parts, false);
    if (location[0] === '.git') {
      // Inside the project, but git runs hooks and honours config from there: an artifact that
      // writes .git/hooks/* would run code in the next job's checkout.
      throw unsafe(entry.name, "would be written into the project's .git directory");
    }
    const key = location.join('/');
    let placement: Placement = { location: key };
    switch (entry.kind) {
      case 'directory':
      case 'file':
        this.remember(key, { kind: entry.kind });
        break;
      case 'symlink': {
        const target = entry.linkTarget ?? '';
        if (target === '' || target.includes('\0')) throw unsafe(entry.name, 'is a symlink without a valid target');
        if (target.startsWith('/')) throw unsafe(entry.name, `is a symlink to the absolute path ${target}`);
        this.resolve(entry.name, [...location.slice(0, -1), ...target.split('/')], true, `is a symlink to ${target}, which leads`);
        this.remember(key, { kind: 'symlink', target });
        break;
      }
      case 'hardlink': {
        const targetParts = archiveName(entry.linkTarget ?? '', entry.name, 'hard link target');
        const linked = this.resolve(entry.name, targetParts, false, `is a hard link to ${entry.linkTarget ?? ''}, which leads`);
        if (this.lookup(linked.join('/')).kind !== 'file') {
          throw unsafe(entry.name, `is a hard link to ${entry.linkTarget ?? ''}, which is not a regular file inside the project`);
        }
        this.remember(key, { kind: 'file' });
        placement = { location: key, linkLocation: linked.join('/') };
        break;
      }
    }
    return placement;
  }

  /**
   * Walks `parts` from the root, following symlinks (virtual first, then on disk) — all of them when
   * `followLast`, else all but the last component. Returns the real location as root-relative parts.
   */
  private resolve(name: string, parts: string[], followLast: boolean, what = 'would be written'): string[] {
    let current: string[] = [];
    const pending = [...parts];
    let hops = 0;
    while (pending.length > 0) {
      const part = pending.shift() as string;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (current.length === 0) throw unsafe(name, `${what} outside the project dir`);
        current.pop();
        continue;
      }
      const next = [...current, part];
      if (pending.length === 0 && !followLast) {
        current = next;
        break;
      }
      const node = this.lookup(next.join('/'));
      if (node.kind !== 'symlink') {
        current = next;
        continue;
      }
      hops += 1;
      if (hops > MAX_SYMLINK_HOPS) throw unsafe(name, 'goes through too many symlinks');
      if (node.target.startsWith('/')) {
        const inside = this.insideRoot(node.target);
        if (inside === undefined) throw unsafe(name, `${what} outside the project dir (through the symlink ${next.join('/')} -> ${node.target})`);
        current = [];
        pending.unshift(...inside);
      } else {
        pending.unshift(...node.target.split('/'));
      }
    }
    return current;
  }

  private lookup(key: string): NodeKind {
    const known = this.virtual.get(key);
    if (known) return known;
    if (this.options.mode === 'plan') {
      const cached = this.disk.get(key);
      if (cached) return cached;
    }
    const node = statOnDisk(posix.join(this.options.root, key));
    if (this.options.mode === 'plan') this.disk.set(key, node);
    return node;
  }

  private remember(key: string, node: NodeKind): void {
    if (this.options.mode === 'plan') this.virtual.set(key, node);
  }

  private insideRoot(absolute: string): string[] | undefined {
    const normal = posix.normalize(absolute);
    for (const root of this.roots) {
      if (normal === root) return [];
      if (normal.startsWith(`${root}/`)) return normal.slice(root.length + 1).split('/');
    }
    return undefined;
  }
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

function statOnDisk(path: string): NodeKind {
  try {
    const stats = lstatSync(path);
    if (stats.isSymbolicLink()) return { kind: 'symlink', target: readlinkSync(path) };
    if (stats.isDirectory()) return { kind: 'directory' };
    if (stats.isFile()) return { kind: 'file' };
    return { kind: 'other' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
    throw error;
  }
}

function unsafe(name: string, reason: string): ArtifactsError {
  return new ArtifactsError('ARCHIVE_UNSAFE', `entry ${JSON.stringify(name)} ${reason}`);
}
