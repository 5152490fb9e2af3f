/**
 * The project dir as the extraction guard sees it: a tree of the nodes looked at so far. A node is
 * read from the disk the first time it is needed; from then on the guard changes the tree the way
 * the writer will change the disk (an entry replaces whatever stands at its location, with all that
 * is below it; missing parents become directories), so that a path or a link can be judged against
 * the layout as it will be at that point of the extraction, and at its end, before anything is
 * written. Without caching (`live`), every lookup asks the disk and nothing is remembered.
 *
 * Paths are walked the way the kernel walks them: symlinks followed (but the last component only
 * when asked), `..` taken from the real directory reached so far. Where the kernel would fail
 * (a missing component, a file used as a directory) the walk goes on by name: it never calls a path
 * inside that the kernel could follow outside.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { posix } from 'node:path';

export interface LayoutNode {
  kind: 'file' | 'directory' | 'symlink' | 'other';
  /** Root-relative path ('' for the root). */
  path: string;
  /** Symlinks: the target as stored. */
  target: string | undefined;
  /** The archive entry that put it there; undefined for what was on disk. */
  entry: string | undefined;
  /** Directories: the children looked at so far (null: known missing); made on first use. */
  children: Map<string, LayoutNode | null> | undefined;
}

/** One component of a walked path: its name and what stands there (undefined: nothing). */
export interface Step {
  name: string;
  node: LayoutNode | undefined;
}

export type WalkResult = { ok: true; steps: Step[] } | { ok: false; problem: 'outside' | 'loop'; via?: string };

const MAX_SYMLINK_HOPS = 40;

export class Layout {
  readonly root: LayoutNode = makeNode('directory', '', undefined, undefined);

  /**
   * `rootDir`: the project dir's real path, where the disk is read. `roots`: every absolute spelling
   * of the project dir an on-disk symlink may use. `cache`: remember nodes and let the guard change them.
   */
  constructor(
    private readonly rootDir: string,
    private readonly roots: string[],
    readonly cache: boolean,
  ) {}

  /** What stands at `name` in `parent` (nothing below a missing node or a non-directory). */
  child(parent: LayoutNode | undefined, name: string): LayoutNode | undefined {
    if (parent?.kind !== 'directory') return undefined;
    if (!this.cache) return fromDisk(this.rootDir, childPath(parent, name));
    parent.children ??= new Map();
    const known = parent.children.get(name);
    if (known !== undefined) return known ?? undefined;
    // A directory the archive made is new: nothing of the disk is below it.
    const node = parent.entry === undefined ? fromDisk(this.rootDir, childPath(parent, name)) : undefined;
    parent.children.set(name, node ?? null);
    return node;
  }

  /** Puts a new node at `name` in `parent`, dropping what stood there and everything below it. */
  put(parent: LayoutNode, name: string, kind: LayoutNode['kind'], entry: string, target?: string): LayoutNode {
    const placed = makeNode(kind, childPath(parent, name), entry, target);
    if (this.cache) (parent.children ??= new Map()).set(name, placed);
    return placed;
  }

  /** Removes what stands at `name` in `parent`. */
  remove(parent: LayoutNode, name: string): void {
    if (this.cache) (parent.children ??= new Map()).set(name, null);
  }

  /** The node `steps` end at (the root for none). */
  nodeAt(steps: Step[]): LayoutNode | undefined {
    return steps.length === 0 ? this.root : steps[steps.length - 1]?.node;
  }

  /**
   * Walks `parts` from `start` (the steps of a directory), following symlinks — all of them when
   * `followLast`, else all but the last component — and returns the real path reached.
   */
  walk(parts: string[], start: Step[], followLast: boolean): WalkResult {
    const steps = [...start];
    const pending = components(parts);
    let hops = 0;
    while (pending.length > 0) {
      const part = pending.shift() as string;
      if (part === '..') {
        if (steps.length === 0) return { ok: false, problem: 'outside' };
        steps.pop();
        continue;
      }
      const node = this.child(this.nodeAt(steps), part);
      if (node?.kind !== 'symlink' || (pending.length === 0 && !followLast)) {
        steps.push({ name: part, node });
        continue;
      }
      hops += 1;
      if (hops > MAX_SYMLINK_HOPS) return { ok: false, problem: 'loop' };
      const target = node.target ?? '';
      if (target.startsWith('/')) {
        // Only links found on disk can be absolute (the guard refuses them in archives).
        const inside = this.insideRoot(target);
        if (inside === undefined) return { ok: false, problem: 'outside', via: `${node.path} -> ${target}` };
        steps.length = 0;
        pending.unshift(...components(inside));
      } else {
        pending.unshift(...components(target.split('/')));
      }
    }
    return { ok: true, steps };
  }

  /**
   * Every symlink in the tree with the steps of its directory: the ones the archive made and the
   * ones on disk that a walk went through.
   */
  symlinks(): Array<{ node: LayoutNode; parent: Step[] }> {
    const found: Array<{ node: LayoutNode; parent: Step[] }> = [];
    // An explicit stack, not recursion: an archive decides how deep the tree goes.
    const pending: Array<{ dir: LayoutNode; steps: Step[] }> = [{ dir: this.root, steps: [] }];
    for (let next = pending.pop(); next; next = pending.pop()) {
      for (const [name, node] of next.dir.children ?? []) {
        if (node?.kind === 'symlink') found.push({ node, parent: next.steps });
        if (node?.kind === 'directory') pending.push({ dir: node, steps: [...next.steps, { name, node }] });
      }
    }
    return found;
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

/** Every node is made here, with all its fields in one order (one object shape: the tree can hold millions). */
function makeNode(kind: LayoutNode['kind'], path: string, entry: string | undefined, target: string | undefined): LayoutNode {
  return { kind, path, target, entry, children: undefined };
}

function childPath(parent: LayoutNode, name: string): string {
  return parent.path === '' ? name : `${parent.path}/${name}`;
}

function components(parts: string[]): string[] {
  return parts.filter((part) => part !== '' && part !== '.');
}

function fromDisk(rootDir: string, path: string): LayoutNode | undefined {
  try {
    const stats = lstatSync(posix.join(rootDir, path));
    if (stats.isSymbolicLink()) return makeNode('symlink', path, undefined, readlinkSync(posix.join(rootDir, path)));
    return makeNode(stats.isDirectory() ? 'directory' : stats.isFile() ? 'file' : 'other', path, undefined, undefined);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}
