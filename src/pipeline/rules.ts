/**
 * `rules:` of jobs and of `workflow:` — read and checked when the pipeline is parsed (so an invalid
 * `if` is a config error naming the job), evaluated per pipeline in `conditions.ts`.
 */
import { ExpressionSyntaxError, parseExpression } from './expression.js';
import { childPath, configError, ConfigErrors, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readBoolean, readEnum, readMap, readString, readStringList, readVariables } from './parse-values.js';
import { readNeeds, readStartIn } from './parse-runtime.js';
import type { AutoCancelSpec, ParsedExpression, RuleSpec, RuleWhen } from './spec.js';
import { INCLUDE_RULE_KEYWORDS, JOB_RULE_KEYWORDS, WORKFLOW_RULE_KEYWORDS, AUTO_CANCEL_KEYWORDS } from './keywords.js';


const JOB_RULE_WHEN: readonly RuleWhen[] = ['on_success', 'on_failure', 'always', 'manual', 'delayed', 'never'];
const WORKFLOW_RULE_WHEN: readonly RuleWhen[] = ['always', 'never'];

/** Whose rules: a job's, `workflow:`'s or an `include:` entry's; each allows its own keys. */
export type RulesOf = 'job' | 'workflow' | 'include';



/** A CI/CD expression, or a config error at `path` saying what is wrong with it. */
export function readExpression(value: unknown, path: ConfigPath): ParsedExpression {
  const text = readString(value, path);
  try {
    return { text, expression: parseExpression(text) };
  } catch (error) {
    if (!(error instanceof ExpressionSyntaxError)) throw error;
    return configError(path, `'${text}' is not a valid expression: ${error.message}`);
  }
}

/**
 * `rules:` of a job, of `workflow:` or of an `include:` entry. Lists nested by `!reference` are
 * flattened. Every bad rule is reported, each with its index.
 */
export function readRules(value: unknown, path: ConfigPath, options: { of: RulesOf }): RuleSpec[] {
  if (!Array.isArray(value)) configError(path, 'must be a list of rules (maps with if, changes, exists, when, …)');
  const list = value.flat(9) as unknown[];
  // GitLab refuses an empty list ("config can't be blank") rather than guess between "never" and "always".
  if (list.length === 0) configError(path, 'must list at least one rule (leave rules: out for a job that always runs)');
  const errors = new ConfigErrors();
  const rules: RuleSpec[] = [];
  for (const [index, raw] of list.entries()) {
    const rule = errors.attempt(() => readRule(raw, childPath(path, String(index)), index, options.of));
    if (rule) rules.push(rule);
  }
  errors.throwIfAny();
  return rules;
}

function readRule(raw: unknown, path: ConfigPath, index: number, of: RulesOf): RuleSpec {
  const map = readMap(raw, path);
  const workflow = of !== 'job';
  checkKeys(map, of === 'job' ? JOB_RULE_KEYWORDS : of === 'workflow' ? WORKFLOW_RULE_KEYWORDS : INCLUDE_RULE_KEYWORDS, path);
  const at = (key: string): ConfigPath => childPath(path, key);
  const has = (key: string): boolean => map[key] !== undefined && map[key] !== null;
  const rule: RuleSpec = { index };
  if (has('if')) rule.if = readExpression(map.if, at('if'));
  if (has('changes')) rule.changes = readChanges(map.changes, at('changes'));
  if (has('exists')) rule.exists = readPathList(map.exists, at('exists'), { allowEmpty: true });
  if (has('when')) rule.when = readEnum(map.when, workflow ? WORKFLOW_RULE_WHEN : JOB_RULE_WHEN, at('when'));
  if (has('allow_failure')) rule.allowFailure = readBoolean(map.allow_failure, at('allow_failure'));
  if (has('variables')) rule.variables = readVariables(map.variables, at('variables'));
  if (map.needs !== undefined) rule.needs = readNeeds(map.needs, at('needs'));
  if (has('interruptible')) rule.interruptible = readBoolean(map.interruptible, at('interruptible'));
  if (has('auto_cancel')) rule.autoCancel = readAutoCancel(map.auto_cancel, at('auto_cancel'));
  if (has('start_in')) {
    if (rule.when !== 'delayed') configError(at('start_in'), 'can only be used with when: delayed');
    rule.startIn = readStartIn(map.start_in, at('start_in'));
  } else if (rule.when === 'delayed') {
    configError(at('start_in'), 'is missing: when: delayed needs start_in (e.g. 30 minutes)');
  }
  return rule;
}

/** `changes: [paths]` or `changes: { paths, compare_to }`. */
export function readChanges(value: unknown, path: ConfigPath): { paths: string[]; compareTo?: string } {
  if (!isMap(value)) return { paths: readPathList(value, path) };
  checkKeys(value, JOB_RULE_KEYWORDS.changes?.keys ?? {}, path);
  const changes: { paths: string[]; compareTo?: string } = { paths: readPathList(value.paths, childPath(path, 'paths')) };
  if (value.compare_to !== undefined && value.compare_to !== null) changes.compareTo = readString(value.compare_to, childPath(path, 'compare_to'));
  return changes;
}

/**
 * `exists:` and `changes:` patterns: a list of paths or globs (`exists: { paths }` too). `exists`
 * may hold an empty entry (a variable that expanded to nothing, written literally): it names no file.
 */
function readPathList(value: unknown, path: ConfigPath, options: { allowEmpty?: boolean } = {}): string[] {
  const list = isMap(value) ? value.paths : value;
  const at = isMap(value) ? childPath(path, 'paths') : path;
  if (isMap(value)) checkKeys(value, JOB_RULE_KEYWORDS.exists?.keys ?? {}, path);
  if (options.allowEmpty && Array.isArray(list) && list.every((item) => typeof item === 'string')) return list as string[];
  return readStringList(list, at);
}

/** `auto_cancel: { on_new_commit, on_job_failure }` of `workflow:` or of a workflow rule. */
export function readAutoCancel(value: unknown, path: ConfigPath): AutoCancelSpec {
  const map = readMap(value, path);
  checkKeys(map, AUTO_CANCEL_KEYWORDS, path);
  const spec: AutoCancelSpec = {};
  if (map.on_new_commit !== undefined && map.on_new_commit !== null) spec.onNewCommit = readEnum(map.on_new_commit, ['conservative', 'interruptible', 'none'] as const, childPath(path, 'on_new_commit'));
  if (map.on_job_failure !== undefined && map.on_job_failure !== null) spec.onJobFailure = readEnum(map.on_job_failure, ['none', 'all'] as const, childPath(path, 'on_job_failure'));
  return spec;
}
