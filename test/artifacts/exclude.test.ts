/** `artifacts:exclude` applied to a selection: globs, directories taking their contents, counts. */
import { describe, expect, it } from 'vitest';
import { excludeEntries, type SelectedEntry, type Selection } from '../../src/artifacts/select.js';

function selection(paths: string[]): Selection {
  const entries: SelectedEntry[] = paths.map((path) => ({
    path: path.replace(/\/$/, ''),
    kind: path.endsWith('/') ? 'directory' : 'file',
    size: path.endsWith('/') ? 0 : 10,
    mode: 0o644,
    mtime: new Date(0),
  }));
  const files = entries.filter((entry) => entry.kind !== 'directory');
  return { entries, files: files.length, bytes: files.length * 10 };
}

const paths = (s: Selection): string[] => s.entries.map((entry) => entry.path);

describe('excludeEntries', () => {
  const all = selection(['out/', 'out/a.txt', 'out/logs/', 'out/logs/b.log', 'out/logs/deep/', 'out/logs/deep/c.log', 'out/x.tmp', 'out/.hidden.tmp']);

  it('leaves out what a glob matches, dot files included, and recounts', async () => {
    const { selection: kept, excluded } = await excludeEntries(all, ['**/*.tmp']);
    expect(paths(kept)).toEqual(['out', 'out/a.txt', 'out/logs', 'out/logs/b.log', 'out/logs/deep', 'out/logs/deep/c.log']);
    expect([excluded, kept.files, kept.bytes]).toEqual([2, 3, 30]);
  });

  it('takes a matching directory with everything in it, with or without a trailing slash or ./', async () => {
    for (const pattern of ['out/logs', 'out/logs/', './out/logs']) {
      expect(paths((await excludeEntries(all, [pattern])).selection)).toEqual(['out', 'out/a.txt', 'out/x.tmp', 'out/.hidden.tmp']);
    }
  });

  it('leaves a directory in, empty, when dir/** takes what is under it', async () => {
    expect(paths((await excludeEntries(all, ['out/logs/**'])).selection)).toEqual(['out', 'out/a.txt', 'out/logs', 'out/x.tmp', 'out/.hidden.tmp']);
  });

  it('changes nothing without patterns', async () => {
    expect(await excludeEntries(all, [])).toEqual({ selection: all, excluded: 0 });
  });

  it('refuses the upload rather than exclude less when a pattern is past the bounds', async () => {
    await expect(excludeEntries(all, [`{${Array.from({ length: 3000 }, (_, i) => `f${i}`).join(',')}}`])).rejects.toThrow(/artifacts:exclude .*longer than 8192 characters/);
  });
});
