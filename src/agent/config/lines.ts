/**
 * Where keys sit in a TOML text. smol-toml gives values, not positions, so this scans the text once:
 * table headers (`[a.b]`, `[[runners]]` with a running index per array) and `key =` lines, skipping
 * the insides of multi-line strings and arrays. Good enough to point a user at the line of a bad value;
 * it is not a TOML parser (the real parse has already succeeded when this runs).
 */

export interface TomlLayout {
  /** Dotted path (`runners.0.limit`) → 1-based line. Tables map to their header line. */
  lines: Map<string, number>;
  /** Line ranges [start, end) (1-based, end exclusive) of each `[[runners]]` block with its sub-tables. */
  runnerBlocks: Array<{ start: number; end: number }>;
}

const HEADER = /^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;
const KEY = /^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=/;

function splitKey(raw: string): string[] {
  return raw.split('.').map((part) => part.trim().replace(/^["']|["']$/g, ''));
}

/** Scans `text` for key and table positions. */
export function tomlLayout(text: string): TomlLayout {
  const lines = new Map<string, number>();
  const runnerBlocks: TomlLayout['runnerBlocks'] = [];
  const arrayCounts = new Map<string, number>();
  let table: string[] = [];
  let inMultiline: string | undefined;
  let bracketDepth = 0;
  const source = text.split('\n');
  const closeRunnerBlock = (lineNo: number): void => {
    const last = runnerBlocks[runnerBlocks.length - 1];
    if (last && last.end === -1) last.end = lineNo;
  };
  source.forEach((line, index) => {
    const lineNo = index + 1;
    if (inMultiline) {
      if (line.includes(inMultiline)) inMultiline = undefined;
      return;
    }
    if (bracketDepth > 0) {
      bracketDepth += depthChange(line);
      return;
    }
    const header = HEADER.exec(line);
    if (header && !KEY.test(line)) {
      const path = splitKey(header[2] ?? '');
      const runner = arrayCounts.get('runners');
      if (header[1] === '[[' && path[0] === 'runners' && path.length > 1 && runner !== undefined) {
        // `[[runners.docker.services]]`: an array inside the latest `[[runners]]` entry.
        const inner = [path[0], String(runner - 1), ...path.slice(1)];
        const name = inner.join('.');
        const n = arrayCounts.get(name) ?? 0;
        arrayCounts.set(name, n + 1);
        table = [...inner, String(n)];
      } else if (header[1] === '[[') {
        const name = path.join('.');
        const n = arrayCounts.get(name) ?? 0;
        arrayCounts.set(name, n + 1);
        table = [...path, String(n)];
        if (name === 'runners') {
          closeRunnerBlock(lineNo);
          runnerBlocks.push({ start: lineNo, end: -1 });
        }
      } else {
        // `[runners.docker]` belongs to the latest `[[runners]]` entry.
        const head = path[0] ?? '';
        const n = arrayCounts.get(head);
        table = n !== undefined && path.length > 1 ? [head, String(n - 1), ...path.slice(1)] : path;
        if (head !== 'runners') closeRunnerBlock(lineNo);
      }
      if (!lines.has(table.join('.'))) lines.set(table.join('.'), lineNo);
      // An array of tables is also at its first header (a warning about the whole array points there).
      const array = table.slice(0, -1).join('.');
      if (header[1] === '[[' && !lines.has(array)) lines.set(array, lineNo);
      return;
    }
    const key = KEY.exec(line);
    if (!key) return;
    const full = [...table, ...splitKey(key[1] ?? '')].join('.');
    if (!lines.has(full)) lines.set(full, lineNo);
    const rest = line.slice(key[0].length);
    const triple = /("""|''')/.exec(rest);
    if (triple && rest.split(triple[1] ?? '').length === 2) inMultiline = triple[1];
    bracketDepth = Math.max(0, depthChange(rest));
  });
  closeRunnerBlock(source.length + 1);
  return { lines, runnerBlocks };
}

/** Net `[` minus `]` outside of strings and comments. */
function depthChange(text: string): number {
  let depth = 0;
  let quote: string | undefined;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#') break;
    else if (ch === '[') depth += 1;
    else if (ch === ']') depth -= 1;
  }
  return depth;
}

/** The line of `path` or of its nearest ancestor that has one. */
export function lineOf(layout: TomlLayout, path: ReadonlyArray<PropertyKey>): number | undefined {
  const parts = path.map(String);
  for (let n = parts.length; n > 0; n -= 1) {
    const line = layout.lines.get(parts.slice(0, n).join('.'));
    if (line !== undefined) return line;
  }
  return undefined;
}
