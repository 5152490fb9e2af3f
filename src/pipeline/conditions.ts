/**
 * Whether a job is part of a pipeline, and how: its `rules` (first match wins) or `only`/`except`,
 * evaluated against the pipeline's ref, source, variables and files. The outcome says what decided,
 * for `exec --list` and the admin API.
 */
import picomatch from 'picomatch';
import type { CommitFiles, RuleContext } from './context.js';
import { evaluateExpression } from './expression.js';
import { PipelineConfigError } from './parse-error.js';
import { DEFAULT_ONLY } from './only-except.js';
import type { JobConditions, JobNeed, JobWhen, RefPolicy, RuleSpec, RuleWhen, SpecVariable } from './spec.js';
import { expandVariables } from './variables-expand.js';


export interface JobDecision {
  included: boolean;
  when: RuleWhen;
  allowFailure: boolean;
  /** The matching rule set `allow_failure` itself: the job's `exit_codes` no longer apply. */
  allowFailureByRule?: boolean;
  /** What decided: `rules:1 (if: $CI_COMMIT_TAG)`, `no rule matched`, `except: refs matched`, … */
  reason: string;
  /** From the matching rule. */
  variables: SpecVariable[];
  /** The matching rule's `needs`, replacing the job's. */
  needs?: JobNeed[];
  startIn?: number;
  /** The matching rule's `interruptible`, replacing the job's. */
  interruptible?: boolean;
}

const ZERO_SHA = /^0{40}$/;
/** Sources with a push to compare against; others (web, api, schedule, …) take `changes` as true. */
const PUSH_SOURCES = new Set(['push', 'merge_request_event', 'external_pull_request_event']);

/** The pipeline's facts, with git answers cached across jobs. */
export class RuleFacts {
  private readonly changed = new Map<string, Promise<readonly string[] | undefined>>();
  private paths: Promise<readonly string[]> | undefined;

  constructor(readonly context: RuleContext) {}

  get files(): CommitFiles {
    return this.context.files;
  }

  changedSince(base: string): Promise<readonly string[] | undefined> {
    let found = this.changed.get(base);
    if (!found) this.changed.set(base, (found = this.files.changedSince(base)));
    return found;
  }

  allPaths(): Promise<readonly string[]> {
    return (this.paths ??= this.files.paths());
  }
}

/** Whether `rule`'s `if`, `changes` and `exists` all hold (a rule without them always does). */
export async function ruleMatches(rule: RuleSpec, facts: RuleFacts, variables: Readonly<Record<string, string>>): Promise<boolean> {
  if (rule.if && !evaluateExpression(rule.if.expression, variables)) return false;
  if (rule.changes && !(await changesMatch(rule.changes, facts, variables))) return false;
  if (rule.exists && !(await existsMatch(rule.exists, facts, variables))) return false;
  return true;
}

async function changesMatch(changes: { paths: string[]; compareTo?: string }, facts: RuleFacts, variables: Readonly<Record<string, string>>): Promise<boolean> {
  const { source, beforeSha } = facts.context;
  if (changes.compareTo !== undefined) {
    const base = expandVariables(changes.compareTo, variables);
    const changed = await facts.changedSince(base);
    // GitLab refuses the pipeline rather than guess what a missing compare_to meant.
    if (changed === undefined) {
      throw new PipelineConfigError(`changes:compare_to '${base}' is not a branch, tag or commit of the repository`, { key: 'changes:compare_to' });
    }
    return anyMatch(changed, changes.paths, variables);
  }
  if (!PUSH_SOURCES.has(source) || ZERO_SHA.test(beforeSha)) return true;
  const changed = await facts.changedSince(beforeSha);
  return changed === undefined || anyMatch(changed, changes.paths, variables);
}

async function existsMatch(patterns: string[], facts: RuleFacts, variables: Readonly<Record<string, string>>): Promise<boolean> {
  return anyMatch(await facts.allPaths(), patterns, variables);
}

/** GitLab matches like `File.fnmatch` with FNM_PATHNAME | FNM_DOTMATCH | FNM_EXTGLOB. */
function anyMatch(paths: readonly string[], patterns: readonly string[], variables: Readonly<Record<string, string>>): boolean {
  const expanded = patterns.map((pattern) => expandVariables(pattern, variables).replace(/^\/+/, '')).filter((pattern) => pattern !== '');
  const matchers = expanded.map((pattern) => picomatch(pattern, { dot: true }));
  return paths.some((path) => matchers.some((isMatch) => isMatch(path)));
}

/** Decides `job` (its `when` and `allow_failure` as written) for this pipeline. */
export async function decideJob(
  job: { when: JobWhen },
  conditions: JobConditions,
  facts: RuleFacts,
  variables: Readonly<Record<string, string>>,
): Promise<JobDecision> {
  if (conditions.rules) return decideByRules(job, conditions, conditions.rules, facts, variables);
  const allowFailure = conditions.allowFailure ?? job.when === 'manual';
  const base = { when: job.when as RuleWhen, allowFailure, variables: [] };
  const only = conditions.only ?? DEFAULT_ONLY;
  const failedOnly = await failedPolicyKey(only, facts, variables);
  if (failedOnly !== undefined) return { ...base, included: false, when: 'never', reason: `only:${failedOnly} did not match` };
  if (conditions.except) {
    const matched = await matchedPolicyKey(conditions.except, facts, variables);
    if (matched !== undefined) return { ...base, included: false, when: 'never', reason: `except:${matched} matched` };
  }
  const reason = conditions.only ? 'only/except matched' : conditions.except ? 'except did not match' : 'default (only: branches, tags)';
  return { ...base, included: true, reason };
}

async function decideByRules(
  job: { when: JobWhen },
  conditions: JobConditions,
  rules: readonly RuleSpec[],
  facts: RuleFacts,
  variables: Readonly<Record<string, string>>,
): Promise<JobDecision> {
  for (const rule of rules) {
    if (!(await ruleMatches(rule, facts, variables))) continue;
    const when = rule.when ?? job.when;
    const decision: JobDecision = {
      included: when !== 'never',
      when,
      // GitLab: a rule's `when: manual` does not let the pipeline pass without it, unlike a job's own
      // `when: manual` (the default comes from the job as written, whatever the rule says).
      allowFailure: rule.allowFailure ?? conditions.allowFailure ?? job.when === 'manual',
      ...(rule.allowFailure !== undefined ? { allowFailureByRule: true } : {}),
      reason: `rules:${rule.index}${describeRule(rule)}`,
      variables: rule.variables ?? [],
    };
    if (rule.startIn !== undefined) decision.startIn = rule.startIn;
    if (rule.needs !== undefined) decision.needs = rule.needs;
    if (rule.interruptible !== undefined) decision.interruptible = rule.interruptible;
    return decision;
  }
  return { included: false, when: 'never', allowFailure: false, reason: 'no rule matched', variables: [] };
}

function describeRule(rule: RuleSpec): string {
  const parts: string[] = [];
  if (rule.if) parts.push(`if: ${rule.if.text}`);
  if (rule.changes) parts.push(`changes: ${rule.changes.paths.join(', ')}`);
  if (rule.exists) parts.push(`exists: ${rule.exists.join(', ')}`);
  if (rule.when) parts.push(`when: ${rule.when}`);
  return parts.length === 0 ? '' : ` (${parts.join('; ')})`;
}

/** `only:` holds when each key it has matches; returns the first key that does not. */
async function failedPolicyKey(policy: RefPolicy, facts: RuleFacts, variables: Readonly<Record<string, string>>): Promise<string | undefined> {
  // `kubernetes: active`: this server has no Kubernetes integration, so it never is.
  if (policy.kubernetes) return 'kubernetes';
  for (const key of ['refs', 'variables', 'changes'] as const) {
    if (policy[key] !== undefined && !(await policyKeyMatches(policy, key, facts, variables))) return key;
  }
  return undefined;
}

/** `except:` holds when any key it has matches; returns that key. */
async function matchedPolicyKey(policy: RefPolicy, facts: RuleFacts, variables: Readonly<Record<string, string>>): Promise<string | undefined> {
  for (const key of ['refs', 'variables', 'changes'] as const) {
    if (policy[key] !== undefined && (await policyKeyMatches(policy, key, facts, variables))) return key;
  }
  return undefined;
}

async function policyKeyMatches(
  policy: RefPolicy,
  key: 'refs' | 'variables' | 'changes',
  facts: RuleFacts,
  variables: Readonly<Record<string, string>>,
): Promise<boolean> {
  if (key === 'refs') return (policy.refs ?? []).some((pattern) => refMatches(pattern, facts.context));
  if (key === 'variables') return (policy.variables ?? []).some((condition) => evaluateExpression(condition.expression, variables));
  return policy.changes === undefined || changesMatch(policy.changes, facts, variables);
}

/** `only`/`except` keywords and the pipeline sources they stand for. */
const SOURCE_KEYWORDS: Readonly<Record<string, string>> = {
  api: 'api',
  chat: 'chat',
  external: 'external',
  external_pull_requests: 'external_pull_request_event',
  merge_requests: 'merge_request_event',
  pipelines: 'pipeline',
  pushes: 'push',
  schedules: 'schedule',
  triggers: 'trigger',
  web: 'web',
};

/** One `only`/`except` ref entry: a keyword, `/regex/`, a name, or any of them with `@project/path`. */
export function refMatches(entry: string, context: RuleContext): boolean {
  const at = entry.lastIndexOf('@');
  if (at > 0 && !entry.startsWith('/')) {
    if (entry.slice(at + 1) !== context.projectPath) return false;
    return refMatches(entry.slice(0, at), context);
  }
  if (entry === 'branches') return !context.tag;
  if (entry === 'tags') return context.tag;
  const source = SOURCE_KEYWORDS[entry];
  if (source !== undefined) return context.source === source;
  const pattern = /^\/(.+)\/([ims]*)$/s.exec(entry);
  if (pattern) return new RegExp(pattern[1] ?? '', [...new Set(pattern[2])].join('')).test(context.ref);
  return entry === context.ref;
}
