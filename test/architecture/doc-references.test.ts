/**
 * Comments cite the project's own docs (the protocol pages and the architecture) by section (`docs/protocol-v4.md §8.6`): every such citation
 * in src/, test/ and bench/ names a doc that exists and a section heading it has, so a renumbered doc
 * cannot leave readers at a section that is not there.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mjs|js|sh)$/.test(entry.name) ? [path] : [];
  });
}

/** The section numbers of a doc's `## 7.` and `### 7.6` headings. */
function sections(doc: string): Set<string> {
  const numbers = [...readFileSync(doc, 'utf8').matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.?\s/gm)].map((m) => m[1]!);
  return new Set(numbers);
}

describe('citations of docs/', () => {
  it('name a doc of the repository and a section that doc has', () => {
    const docs = new Map<string, Set<string>>();
    const dead: string[] = [];
    const files = ['src', 'test', 'bench'].flatMap((dir) => sourceFiles(join(repo, dir)));
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(/(?<![\w/])docs\/((?:protocol-v\d+|architecture)\.md)(?: §(\d+(?:\.\d+)*))?/g)) {
        const [cited, name, section] = match;
        const doc = join(repo, 'docs', name!);
        if (!existsSync(doc)) {
          dead.push(`${relative(repo, file)}: ${cited} (no such doc)`);
          continue;
        }
        if (!docs.has(doc)) docs.set(doc, sections(doc));
        if (section && !docs.get(doc)!.has(section)) dead.push(`${relative(repo, file)}: ${cited} (no such section)`);
      }
    }
    expect(files.length).toBeGreaterThan(100);
    expect(dead).toEqual([]);
  });
});
