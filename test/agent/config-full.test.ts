/**
 * A config.toml of GitLab Runner 19.3 that sets every key it has (test/fixtures/gitlab-runner-19-full-config.toml,
 * made from test/fixtures/gitlab-runner-19.3-config-keys.json) loads as the key tables say: each honoured
 * key is read, each warned key gives its one warning with its line and reason (a key inside a table that
 * is warned about as a whole is covered by that table's warning), and nothing else is said.
 */
import { configFlagWarnings } from '../../src/agent/config/feature-flags.js';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import type { KeyTable } from '../../src/agent/config/keys.js';
import { GLOBAL_KEYS } from '../../src/agent/config/schema.js';
import { tomlLayout } from '../../src/agent/config/lines.js';

const FILE = new URL('../fixtures/gitlab-runner-19-full-config.toml', import.meta.url);
const text = await readFile(FILE, 'utf8');
const fixture = JSON.parse(await readFile(new URL('../fixtures/gitlab-runner-19.3-config-keys.json', import.meta.url), 'utf8')) as { tables: Record<string, Record<string, string>> };

type Outcome = { path: string; key: string; expect: 'read' | 'warned' | 'covered'; reason?: string };

/** What the tables say of every key of the fixture: read, warned (with the reason), or covered by a warned table above it. */
function outcomes(): Outcome[] {
  const found: Outcome[] = [];
  const walk = (table: KeyTable, path: string, covered: boolean): void => {
    for (const [key, entry] of Object.entries(table.keys)) {
      if (entry.origin) continue;
      const status = entry.support.status;
      const outcome: Outcome = covered ? { path, key, expect: 'covered' } : status === 'honoured' ? { path, key, expect: 'read' } : { path, key, expect: 'warned', ...(entry.support.status === 'warned' ? { reason: entry.support.reason } : {}) };
      found.push(outcome);
      if (entry.table) walk(entry.table, path === '' ? key : `${path}.${key}`, covered || status !== 'honoured');
    }
  };
  walk(GLOBAL_KEYS, '', false);
  return found;
}

/** The values at a dotted path of the parsed file, through every element of the arrays on the way. */
function valuesAt(root: unknown, path: string[]): unknown[] {
  if (path.length === 0) return [root];
  if (Array.isArray(root)) return root.flatMap((item) => valuesAt(item, path));
  if (root === null || typeof root !== 'object') return [];
  const [head = '', ...rest] = path;
  return valuesAt((root as Record<string, unknown>)[head], rest);
}

describe('a GitLab Runner 19 config.toml that sets every key', () => {
  const loaded = parseConfig(text, 'full.toml', { checkTlsFiles: false });
  const all = outcomes();

  it('sets every key of GitLab Runner 19.3', () => {
    const lines = tomlLayout(text).lines;
    const set = new Set([...lines.keys()].map((path) => path.replace(/\.\d+(?=\.|$)/g, '')));
    const missing = Object.entries(fixture.tables).flatMap(([path, keys]) => Object.keys(keys).map((key) => (path === '' ? key : `${path}.${key}`))).filter((full) => !set.has(full));
    expect(missing).toEqual([]);
  });

  it('reads every honoured key', () => {
    const unread = all.filter((o) => o.expect === 'read').filter((o) => valuesAt(loaded.config, [...(o.path === '' ? [] : o.path.split('.')), o.key]).every((v) => v === undefined));
    expect(unread.map((o) => `${o.path}.${o.key}`)).toEqual([]);
  });

  it('warns once about every warned key, with its line and reason, and about nothing else', () => {
    // A top-level key and an entry's top-level key read alike (`machine`): their lines tell them apart.
    const expected = new Map<string, number>();
    for (const o of all.filter((outcome) => outcome.expect === 'warned')) {
      const table = o.path === '' || o.path === 'runners' ? '' : ` in [${o.path}]`;
      const line = `\`${o.key}\`${table} is ignored: ${o.reason ?? ''}`;
      expected.set(line, (expected.get(line) ?? 0) + 1);
    }
    // A feature flag the file sets to what ci-runner does not do is warned about too (feature-flags.ts).
    for (const runner of loaded.config.runners) {
      for (const line of configFlagWarnings(runner.feature_flags)) expected.set(`[runners.feature_flags] ${line}`, (expected.get(`[runners.feature_flags] ${line}`) ?? 0) + 1);
    }
    const said = new Map<string, number>();
    for (const warning of loaded.warnings) {
      const line = warning.replace(/^full\.toml:\d+: /, '');
      said.set(line, (said.get(line) ?? 0) + 1);
    }
    expect(Object.fromEntries(said)).toEqual(Object.fromEntries(expected));
    expect(loaded.warnings.every((w) => /^full\.toml:\d+: /.test(w))).toBe(true);
  });

  it('counts what it does with GitLab Runner 19.3\'s keys', () => {
    const counts = { read: 0, warned: 0, covered: 0 };
    for (const o of all) counts[o.expect] += 1;
    // Printed for the report; the tests above hold each key to its table.
    console.log(`GitLab Runner 19.3 keys: ${all.length}; read ${counts.read}, warned about ${counts.warned}, inside a table warned about as a whole ${counts.covered}`);
    expect(counts.read + counts.warned + counts.covered).toBe(all.length);
  });
});
