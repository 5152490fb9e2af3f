/**
 * `parallel: N` and `parallel: matrix:` — one job written, several run. Names follow GitLab:
 * `rspec 1/3` … `rspec 3/3`, and `deploy: [aws, eu-west-1]` (the matrix values in the order the
 * variables are written). Each copy knows its `CI_NODE_INDEX` / `CI_NODE_TOTAL`; matrix copies also
 * get their variables.
 */
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { readMap } from './parse-values.js';
import type { JobSpec, SpecVariable } from './spec.js';

/** GitLab's limit, for `parallel: N` and for the jobs of one matrix. */
const MAX_PARALLEL = 200;
/** A matrix variable: GitLab takes letters, digits, `_` and `-` (a `-` name is not exported to shells). */
const MATRIX_NAME = /^[A-Za-z0-9_-]+$/;

export interface ParallelCopy {
  /** What follows the job's name: ` 2/3` or `: [aws, eu]`. */
  suffix: string;
  variables: SpecVariable[];
  /** A `matrix:` copy's values (absent for `parallel: N`). */
  matrix?: Record<string, string>;
}

/** The copies `parallel:` asks for. */
export function readParallel(value: unknown, path: ConfigPath): ParallelCopy[] {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 1 || value > MAX_PARALLEL) configError(path, `must be a whole number from 1 to ${MAX_PARALLEL}`);
    return Array.from({ length: value }, (_, index) => ({ suffix: ` ${index + 1}/${value}`, variables: [] }));
  }
  const map = readMap(value, path);
  const at = childPath(path, 'matrix');
  if (Object.keys(map).some((key) => key !== 'matrix')) configError(path, 'must be a number or a map with matrix: (a list of variable maps)');
  if (!Array.isArray(map.matrix) || map.matrix.length === 0) configError(at, 'must be a non-empty list of maps of variables to values');
  const copies = map.matrix.flatMap((entry, index) => combinations(entry, childPath(at, String(index))));
  if (copies.length > MAX_PARALLEL) configError(at, `makes ${copies.length} jobs; at most ${MAX_PARALLEL} are allowed`);
  return copies.map((variables) => ({
    suffix: `: [${variables.map((variable) => variable.value).join(', ')}]`,
    variables,
    matrix: Object.fromEntries(variables.map((variable) => [variable.key, variable.value])),
  }));
}

/** Every combination of one matrix entry's values, the first variable varying slowest. */
function combinations(entry: unknown, path: ConfigPath): Array<Array<{ key: string; value: string }>> {
  const map = readMap(entry, path);
  let result: Array<Array<{ key: string; value: string }>> = [[]];
  for (const [key, raw] of Object.entries(map)) {
    const at = childPath(path, key);
    if (!MATRIX_NAME.test(key)) configError(at, 'is not a valid variable name (letters, digits, _ and -)');
    const values = (Array.isArray(raw) ? raw : [raw]).map((item) => {
      if (typeof item === 'string' || (typeof item === 'number' && Number.isFinite(item))) return String(item);
      return configError(at, 'must be a value or a list of values (strings or numbers)');
    });
    if (values.length === 0) configError(at, 'must list at least one value');
    result = result.flatMap((combination) => values.map((value) => [...combination, { key, value }]));
  }
  if (result[0]?.length === 0) configError(path, 'must name at least one variable');
  return result;
}

/** The copies of `job`; matrix variables win over the job's own of the same name. */
export function expandParallel(job: JobSpec, copies: readonly ParallelCopy[]): JobSpec[] {
  return copies.map((copy, index) => {
    const names = new Set(copy.variables.map((variable) => variable.key));
    return {
      ...job,
      name: `${job.name}${copy.suffix}`,
      variables: [...job.variables.filter((variable) => !names.has(variable.key)), ...copy.variables.map((variable) => ({ ...variable }))],
      parallel: { name: job.name, index: index + 1, total: copies.length, ...(copy.matrix ? { matrix: { ...copy.matrix } } : {}) },
    };
  });
}
