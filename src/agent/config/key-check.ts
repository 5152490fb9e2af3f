/**
 * Checks a parsed config.toml's keys against the key tables (keys.ts) before the zod schema sees it:
 * an honoured key stays (and its table, or each table of its array, is checked in turn); a warned key is
 * dropped, with one warning naming it, its line and the reason when it is set (GitLab Runner writes
 * unset keys as false, 0, "" or an empty table: nothing was asked for); a refused key that is set stops
 * the load with the reason; any other key is unknown, with the nearest known one suggested.
 */
import type { KeyTable } from './keys.js';

export interface KeyFindings {
  warnings: string[];
  problems: string[];
  /** The dotted paths of the tables checked here: the schema's own unknown-key issues there are repeats. */
  checked: Set<string>;
}

/** Where a path sits in the file: `file:line`. */
export type Where = (path: ReadonlyArray<PropertyKey>) => string;

/** Checks `raw` (the table at `at`) against `table`, deleting what is dropped; findings go into `found`. */
export function checkKeys(raw: Record<string, unknown>, table: KeyTable, at: PropertyKey[], where: Where, found: KeyFindings): void {
  found.checked.add(at.join('.'));
  for (const name of Object.keys(raw)) {
    const path = [...at, name];
    const entry = table.keys[name];
    const value = raw[name];
    if (!entry) {
      found.problems.push(unknownKey(name, table, at, where(path)));
      continue;
    }
    const { support } = entry;
    if (support.status === 'honoured') {
      if (entry.table) checkInner(value, entry.table, path, where, found);
      continue;
    }
    if (!isUnset(value)) {
      if (support.status === 'warned') found.warnings.push(`${where(path)}: \`${name}\`${within(at)} is ignored: ${support.reason}`);
      else found.problems.push(`${where(path)}: \`${name}\`${within(at)} is refused: ${support.reason}`);
    }
    delete raw[name];
  }
}

/** A table, or each table of an array (an array may also hold plain values: a service as a string). */
function checkInner(value: unknown, table: KeyTable, path: PropertyKey[], where: Where, found: KeyFindings): void {
  if (isTable(value)) checkKeys(value, table, path, where, found);
  else if (Array.isArray(value)) value.forEach((item, i) => isTable(item) && checkKeys(item, table, [...path, i], where, found));
}

export const isTable = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);

/** false, 0, "", an empty list or table, or Go's zero time (0001-01-01). */
export function isUnset(value: unknown): boolean {
  if (value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (value instanceof Date) return value.getUTCFullYear() <= 1;
  if (isTable(value)) return Object.values(value).every(isUnset);
  return false;
}

/** ` in [runners.docker]` for a key below an entry's top level; nothing at the top or an entry's top. */
function within(at: readonly PropertyKey[]): string {
  const names = at.filter((part) => typeof part === 'string');
  return names.length === 0 || (names.length === 1 && names[0] === 'runners') ? '' : ` in [${names.join('.')}]`;
}

function unknownKey(name: string, table: KeyTable, at: readonly PropertyKey[], where: string): string {
  const all = Object.keys(table.keys);
  const guess = closest(name, all);
  const read = all.filter((key) => table.keys[key]?.support.status === 'honoured');
  return `${where}: unknown key \`${name}\`${within(at)}${guess ? ` (did you mean \`${guess}\`?)` : ''}; expected one of ${read.join(', ')}`;
}

/** The key within edit distance 2, if any. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const candidate of known) {
    const d = distance(key.toLowerCase().replace(/-/g, '_'), candidate.toLowerCase().replace(/-/g, '_'));
    if (d <= 2 && (!best || d < best.d)) best = { key: candidate, d };
  }
  return best?.key;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    let prev = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const tmp = row[j] ?? 0;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length] ?? 0;
}
