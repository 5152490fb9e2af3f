/**
 * A table inside a `[[runners]]` entry (`[runners.docker]`, `[runners.cache]`, …) as the config
 * schema takes it: each lives in its own module and is listed once in runner-schema.ts, which adds it
 * to the entry's schema and to the loader's key checks.
 */
import type { z } from 'zod';

export interface RunnerSection<K extends string = string, S extends z.ZodType = z.ZodType> {
  /** The table's key in an entry: `docker` for `[runners.docker]`. */
  readonly key: K;
  /** Its schema, with what an absent table becomes (`.prefault({})` or `.optional()`). */
  readonly schema: S;
  /**
   * For a table checked key by key: the keys it reads, and GitLab Runner's keys it has no use for (a
   * warning names them). Any other key is an error with a suggestion. Without it the table is free-form.
   */
  readonly keys?: { readonly known: readonly string[]; readonly ignored: ReadonlySet<string> };
}

/** The schema shape of `sections`, each under its key. */
export type SectionsShape<T extends readonly RunnerSection[]> = { [S in T[number] as S['key']]: S['schema'] };

export function sectionsShape<const T extends readonly RunnerSection[]>(sections: T): SectionsShape<T> {
  return Object.fromEntries(sections.map((section) => [section.key, section.schema])) as SectionsShape<T>;
}
