/**
 * Pieces the `[runners.kubernetes]` schemas share (kubernetes-schema.ts, kubernetes-pod-schema.ts,
 * kubernetes-volumes-schema.ts): GitLab Runner writes every key it knows into config.toml, unset ones
 * as `""`, `0`, `false` or an empty table, so these read `""` as unset; a table whose keys are all
 * read becomes a key table of honoured keys in one call; and the reasons of the keys not applied.
 */
import { z } from 'zod';
import { goRegExp } from '../../executors/kubernetes/overwrites.js';
import { QUANTITY_FORM, parseQuantity } from '../../executors/kubernetes/quantity.js';
import { honoured, warned } from '../../util/compat.js';
import { key, type KeyEntry, type KeyTable } from './keys.js';

/** The keys about GitLab Runner's helper container. */
export const HELPER = warned("ci-runner's kubernetes executor has no helper container: get_sources, artifacts and cache run on the runner");

/** A string; `""` (GitLab Runner's unset) reads as unset. */
export const optString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

export const stringList = z.array(z.string().min(1)).default([]);
export const stringMap = z.record(z.string().min(1), z.string()).default({});

/** A regex (RE2 as GitLab Runner reads it) JavaScript can run; `""` reads as unset (no overwrite allowed). */
export const regexString = optString.refine(
  (v) => {
    if (v === undefined) return true;
    try {
      goRegExp(v);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'a regular expression (Go/RE2 syntax) that JavaScript can run too' },
);

/** A Kubernetes resource quantity (`500m`, `1.5`, `2`, `512Mi`, `1G`); `""` reads as unset. */
export const quantity = z
  .union([z.string().refine((v) => v === '' || parseQuantity(v) !== undefined, QUANTITY_FORM), z.number().nonnegative()], { error: QUANTITY_FORM })
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : String(v)));

/** A DNS-1123 label, as Kubernetes names volumes and containers. */
export const dnsLabel = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a DNS-1123 label: lowercase letters, digits and "-", at most 63');

/** A key table of `schema` with every key honoured; `tables` for keys that are tables, `extra` for keys it does not read. */
export function readTable(schema: z.ZodObject, tables: Readonly<Record<string, KeyTable>> = {}, extra: Readonly<Record<string, KeyEntry>> = {}): KeyTable {
  const keys: Record<string, KeyEntry> = {};
  for (const name of Object.keys(schema.shape)) keys[name] = key(honoured(), tables[name]);
  return { schema, keys: { ...keys, ...extra } };
}
