/**
 * `extends:` — a job inherits the configuration of one or more other jobs (usually hidden `.templates`),
 * deep-merged: maps key by key, lists and scalars replaced. Bases are merged in the order listed and
 * the job's own keys last; a base's own `extends` is resolved first, up to GitLab's 11 levels.
 */
import { ConfigErrors, PipelineConfigError } from './parse-error.js';
import { deepMerge, isPlainMap } from './merge.js';
import type { YamlMap } from './parse-values.js';

const MAX_DEPTH = 11;

/**
 * Returns `root` with every job's `extends` merged in (and the key removed). Jobs are the entries
 * that are maps and not in `globalKeys`. A missing base, a cycle or a chain deeper than 11 is
 * recorded in `errors`, naming the job, and the job's name added to `broken`.
 */
export function resolveExtends(root: YamlMap, globalKeys: readonly string[], errors: ConfigErrors, broken: Set<string>): YamlMap {
  const done = new Map<string, YamlMap>();
  const isJob = (name: string): boolean => !globalKeys.includes(name) && isPlainMap(root[name]);

  const resolve = (name: string, chain: readonly string[]): YamlMap => {
    const cached = done.get(name);
    if (cached) return cached;
    const job = root[name] as YamlMap;
    const { extends: bases, ...own } = job;
    if (bases === undefined || bases === null) return own;
    const first = chain[0] ?? name;
    if (chain.length >= MAX_DEPTH) {
      throw new PipelineConfigError(`jobs:${first} extends nests deeper than ${MAX_DEPTH} levels (${[...chain, name].join(' → ')})`, { job: first, key: 'extends' });
    }
    let merged: YamlMap = {};
    for (const base of readBases(bases, name)) {
      if (base === name || chain.includes(base)) {
        throw new PipelineConfigError(`jobs:${first} extends forms a cycle: ${[...chain, name, base].join(' → ')}`, { job: first, key: 'extends' });
      }
      if (!isJob(base)) {
        throw new PipelineConfigError(`jobs:${name} extends '${base}', which is not a job or hidden job (.name) of this pipeline`, { job: name, key: 'extends' });
      }
      merged = deepMerge(merged, resolve(base, [...chain, name]));
    }
    const result = deepMerge(merged, own);
    done.set(name, result);
    return result;
  };

  const resolved: YamlMap = {};
  for (const [name, value] of Object.entries(root)) {
    const job = isJob(name) ? errors.attempt(() => resolve(name, [])) : value;
    if (job === undefined) broken.add(name);
    resolved[name] = job ?? value;
  }
  return resolved;
}

function readBases(value: unknown, job: string): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || !list.every((item) => typeof item === 'string' && item !== '')) {
    throw new PipelineConfigError(`jobs:${job} extends must be a job name or a list of job names`, { job, key: 'extends' });
  }
  return list as string[];
}
