/**
 * GitLab's deep merge for `include` and `extends`: maps merge key by key, recursively; anything else
 * (lists, strings, `!reference` markers) in the overriding side replaces what was there.
 */
import type { YamlMap } from './parse-values.js';

/** A map as YAML gives it; not a list, not a `!reference` marker. */
export function isPlainMap(value: unknown): value is YamlMap {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** A new map: `base` with `override` merged over it. Neither argument is changed. */
export function deepMerge(base: YamlMap, override: YamlMap): YamlMap {
  const merged: YamlMap = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const under = merged[key];
    merged[key] = isPlainMap(under) && isPlainMap(value) ? deepMerge(under, value) : value;
  }
  return merged;
}
