/**
 * `only:` / `except:` — the older way to choose when a job runs: refs (names, `/regex/`, keywords such
 * as `branches`, `tags`, `schedules`), `variables` expressions and `changes`. Read here; evaluated in
 * `conditions.ts`.
 */
import { parseExpression } from './expression.js';
import { childPath, configError, ConfigErrors, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readEnum, readStringList } from './parse-values.js';
import { readChanges, readExpression } from './rules.js';
import type { ParsedExpression, RefPolicy } from './spec.js';
import { JOB_KEYWORDS } from './keywords.js';


/** What `only:` is when a job has neither `rules` nor `only`. */
export const DEFAULT_ONLY: RefPolicy = { refs: ['branches', 'tags'] };

/** `only: [main, /^release-/]` or `only: { refs, variables, changes }`. */
export function readPolicy(value: unknown, path: ConfigPath): RefPolicy {
  if (!isMap(value)) {
    const refs = readStringList(typeof value === 'string' ? [value] : value, path);
    refs.forEach((ref, index) => checkRefPattern(ref, childPath(path, String(index))));
    return { refs };
  }
  checkKeys(value, JOB_KEYWORDS.only?.keys ?? {}, path);
  const errors = new ConfigErrors();
  const policy: RefPolicy = {};
  if (value.refs !== undefined && value.refs !== null) {
    const refs = errors.attempt(() => readPolicy(value.refs, childPath(path, 'refs')).refs);
    if (refs) policy.refs = refs;
  }
  if (value.variables !== undefined && value.variables !== null) {
    const at = childPath(path, 'variables');
    const list = errors.attempt(() => readStringList(value.variables, at)) ?? [];
    const parsed = list.map((text, index) => errors.attempt(() => readExpression(text, childPath(at, String(index)))));
    policy.variables = parsed.filter((item): item is ParsedExpression => item !== undefined);
  }
  if (value.kubernetes !== undefined && value.kubernetes !== null) {
    if (errors.attempt(() => readEnum(value.kubernetes, ['active'] as const, childPath(path, 'kubernetes'))) !== undefined) policy.kubernetes = true;
  }
  if (value.changes !== undefined && value.changes !== null) {
    const changes = errors.attempt(() => readChanges(value.changes, childPath(path, 'changes')));
    if (changes) policy.changes = changes;
  }
  errors.throwIfAny();
  return policy;
}

/** A `/regex/` ref pattern must compile; names and keywords are taken as written. */
function checkRefPattern(ref: string, path: ConfigPath): void {
  if (!/^\/.+\/[ims]*$/s.test(ref)) return;
  try {
    parseExpression(`"" =~ ${ref}`);
  } catch (error) {
    configError(path, `'${ref}' is not a valid regular expression: ${(error as Error).message}`);
  }
}
