/**
 * `!reference [job, key, …]` — a value copied from elsewhere in the (merged) configuration, resolved
 * after includes and `extends` as GitLab does. A reference may point at a value that holds
 * references itself, up to 10 levels.
 */
import { type ConfigErrors, PipelineConfigError } from './parse-error.js';
import { isPlainMap } from './merge.js';
import type { YamlMap } from './parse-values.js';
import { ReferenceTag } from './yaml-load.js';

const MAX_DEPTH = 10;

/**
 * `root` with every `!reference` replaced by what it points at. A bad reference is recorded in
 * `errors` and the entry holding it added to `broken`.
 */
export function resolveReferences(root: YamlMap, globalKeys: readonly string[], errors: ConfigErrors, broken: Set<string>): YamlMap {
  const resolved: YamlMap = {};
  for (const [name, value] of Object.entries(root)) {
    const where = globalKeys.includes(name) ? {} : { job: name };
    const replaced = errors.attempt(() => replace(root, value, where, 0));
    if (replaced === undefined && value !== undefined) broken.add(name);
    resolved[name] = replaced ?? value;
  }
  return resolved;
}

function replace(root: YamlMap, value: unknown, where: { job?: string }, depth: number): unknown {
  if (value instanceof ReferenceTag) return replace(root, lookup(root, value, where, depth), where, depth + 1);
  if (Array.isArray(value)) return value.map((item) => replace(root, item, where, depth));
  if (isPlainMap(value)) {
    const out: YamlMap = {};
    for (const [key, inner] of Object.entries(value)) out[key] = replace(root, inner, where, depth);
    return out;
  }
  return value;
}

function lookup(root: YamlMap, reference: ReferenceTag, where: { job?: string }, depth: number): unknown {
  const text = `!reference [${reference.path.join(', ')}]`;
  const prefix = where.job === undefined ? '' : `jobs:${where.job} `;
  if (depth >= MAX_DEPTH) throw new PipelineConfigError(`${prefix}${text} nests references deeper than ${MAX_DEPTH} levels`, { ...where, key: '!reference' });
  let current: unknown = root;
  for (const key of reference.path) {
    if (!isPlainMap(current) || !Object.hasOwn(current, key)) {
      throw new PipelineConfigError(`${prefix}${text} points at nothing: '${key}' is not defined there`, { ...where, key: '!reference' });
    }
    current = current[key];
  }
  return current;
}
