/**
 * config.toml as a compatibility surface (STYLE.md habit 15): one key table per TOML table, kept in the
 * module of that table (`*-schema.ts`), giving each key GitLab Runner 19 has there (and each of ours) a
 * `Support`. The loader checks a file's keys against these tables only (key-check.ts): an honoured key
 * goes on to the table's zod schema, a warned one is dropped with one warning, a refused one stops the
 * load, any other is an unknown key. A test holds the tables against GitLab Runner 19.3's own list
 * (test/fixtures/gitlab-runner-19.3-config-keys.json), so no key of theirs can be missing here.
 */
import type { z } from 'zod';
import { warned, type Support } from '../../util/compat.js';

export interface KeyEntry {
  readonly support: Support;
  /**
   * Whose name it is: GitLab Runner 19's when absent; `ours` for ci-runner's own keys; `older` for a key
   * an earlier GitLab Runner had and 19 no longer has (19 ignores it; we say so).
   */
  readonly origin?: 'ours' | 'older';
  /** A table or an array of tables: its keys, checked the same way when the entry is honoured. */
  readonly table?: KeyTable;
}

export interface KeyTable {
  /** The zod object that reads the table's honoured keys; absent where nothing is read. */
  readonly schema?: z.ZodObject;
  readonly keys: Readonly<Record<string, KeyEntry>>;
}

/** A GitLab Runner 19 key; `table` for a table or an array of tables. */
export function key(support: Support, table?: KeyTable): KeyEntry {
  return table ? { support, table } : { support };
}

/** One of ci-runner's own keys. */
export function ours(support: Support): KeyEntry {
  return { support, origin: 'ours' };
}

/** A key of an earlier GitLab Runner that 19 no longer has. */
export function older(support: Support): KeyEntry {
  return { support, origin: 'older' };
}

/**
 * The key table read by `schema`: every key of the schema must have an entry (a compile error
 * otherwise), and the other entries say what becomes of GitLab Runner's keys the schema does not read.
 */
export function keyTable<S extends z.ZodObject>(
  schema: S,
  keys: { readonly [K in keyof S['shape']]: KeyEntry } & Readonly<Record<string, KeyEntry>>,
): KeyTable {
  return { schema, keys };
}

/**
 * A table nothing reads: each of `names` is warned with `reason`, and each of `tables` is a sub-table
 * (or array of tables) warned with the same reason.
 */
export function warnedTable(reason: string, names: readonly string[], tables: Readonly<Record<string, KeyTable>> = {}): KeyTable {
  const support = warned(reason);
  const keys: Record<string, KeyEntry> = Object.fromEntries(names.map((name) => [name, key(support)]));
  for (const [name, table] of Object.entries(tables)) keys[name] = key(support, table);
  return { keys };
}
