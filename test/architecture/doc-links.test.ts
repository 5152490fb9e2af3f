/**
 * The README and docs/ as a reader follows them: every relative link names a file of the repository
 * and, when it has an anchor, a heading that file has; and every page under docs/ can be reached from
 * the README, directly or through the pages it links.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { slug } from '../../scripts/compat/markdown.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks and code spans, where links and headings are. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
}

/** The anchors of a page's headings, as GitHub makes them (a repeated one gets -1, -2, …). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const heading = (match[1] ?? '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  from: string;
  target: string;
}

function links(file: string): Link[] {
  return [...prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => ({ from: file, target }));
}

const pages = [join(repo, 'README.md'), ...markdownFiles(join(repo, 'docs'))];

/** The file a link leads to (the page itself for `#anchor`), and its anchor. */
function resolveLink(link: Link): { file: string; anchor: string | undefined } {
  const [path = '', anchor] = link.target.split('#', 2);
  return { file: path === '' ? link.from : resolve(dirname(link.from), decodeURIComponent(path)), anchor };
}

describe('README.md and docs/', () => {
  it('have no dead relative link or anchor', () => {
    const dead: string[] = [];
    const cache = new Map<string, Set<string>>();
    for (const page of pages) {
      for (const link of links(page)) {
        const { file, anchor } = resolveLink(link);
        const where = `${relative(repo, page)}: ${link.target}`;
        if (!existsSync(file)) {
          dead.push(`${where} (no such file)`);
          continue;
        }
        if (anchor === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) continue;
        if (!cache.has(file)) cache.set(file, anchors(file));
        if (!cache.get(file)!.has(anchor)) dead.push(`${where} (no such heading)`);
      }
    }
    expect(pages.length).toBeGreaterThan(15);
    expect(dead).toEqual([]);
  });

  it('can all be reached from the README', () => {
    const reached = new Set<string>();
    const queue = [join(repo, 'README.md')];
    while (queue.length > 0) {
      const page = queue.shift()!;
      if (reached.has(page)) continue;
      reached.add(page);
      for (const link of links(page)) {
        const { file } = resolveLink(link);
        if (file.endsWith('.md') && existsSync(file) && !reached.has(file)) queue.push(file);
      }
    }
    expect(pages.filter((page) => !reached.has(page)).map((page) => relative(repo, page))).toEqual([]);
  });
});
