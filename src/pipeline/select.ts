/**
 * Which jobs of a parsed pipeline a given pipeline runs (`workflow: rules`, then each job's `rules` or
 * `only`/`except`), and how: a matching rule sets `when`, `allow_failure`, `start_in` and variables.
 * Jobs a rule leaves out (`when: never`, no rule matched) are not created; the plan still lists them
 * with the reason, for `exec --list` and the admin API.
 */
import { decideJob, RuleFacts, ruleMatches } from './conditions.js';
import type { RuleContext } from './context.js';
import { keepChosenNeeds } from './needs-graph.js';
import { ConfigErrors, PipelineConfigError } from './parse-error.js';
import { jobVariables } from './predefined.js';
import type { AutoCancelSpec, JobSpec, JobWhen, PipelineSpec, RuleWhen, SpecVariable } from './spec.js';
import { expandVariables } from './variables-expand.js';

export interface JobOutcome {
  name: string;
  stage: string;
  /** False: the job is not part of this pipeline (`when` is then `never`). */
  included: boolean;
  when: RuleWhen;
  allowFailure: boolean;
  /** What decided, e.g. `rules:0 (if: $CI_COMMIT_BRANCH == "main")` or `no rule matched`. */
  reason: string;
}

export interface PipelinePlan {
  stages: string[];
  /** `workflow: name` with variables expanded; absent when the file names none. */
  name?: string;
  /** `workflow: auto_cancel`, or the matching workflow rule's. */
  autoCancel?: AutoCancelSpec;
  /** False when `workflow: rules` keep the whole pipeline from being created. */
  run: boolean;
  workflow: string;
  /** The jobs to create, with what their rule decided. */
  jobs: JobSpec[];
  /** Every job of the file (each `parallel` copy), in file order. */
  outcomes: JobOutcome[];
}

type Variables = SpecVariable[];

/** One line of `exec --list`: a job's outcome, and its spec (stage, needs, …) when it runs. */
export interface PlannedJob extends JobOutcome {
  job: JobSpec | undefined;
}

/** Every job of the plan in file order, each with its outcome and, when included, what will run. */
export function plannedJobs(plan: PipelinePlan): PlannedJob[] {
  const chosen = new Map(plan.jobs.map((job) => [job.name, job]));
  return plan.outcomes.map((outcome) => ({ ...outcome, job: chosen.get(outcome.name) }));
}

/**
 * Evaluates `spec` for the pipeline described by `context`. Throws `PipelineConfigError` when a chosen
 * job needs (unless `optional`) or depends on one left out.
 */
export async function selectJobs(spec: PipelineSpec, context: RuleContext): Promise<PipelinePlan> {
  const facts = new RuleFacts(context);
  const plan: PipelinePlan = { stages: spec.stages, run: true, workflow: 'no workflow rules', jobs: [], outcomes: [] };
  let workflowVariables: Variables = [];
  if (spec.workflow) {
    const scope = { ...context.predefined, ...toRecord(spec.variables, context), ...context.variables };
    const rule = await firstMatch(spec.workflow, facts, scope).catch((error: unknown) => {
      throw placed(error, 'workflow:rules ');
    });
    plan.workflow = rule === undefined ? 'no workflow rule matched' : `workflow:rules:${rule.index}${rule.if ? ` (if: ${rule.if.text})` : ''}`;
    if (rule === undefined || rule.when === 'never') {
      plan.run = false;
      return plan;
    }
    workflowVariables = rule.variables ?? [];
    if (rule.autoCancel !== undefined) plan.autoCancel = { ...spec.autoCancel, ...rule.autoCancel };
  }
  if (plan.autoCancel === undefined && spec.autoCancel !== undefined) plan.autoCancel = spec.autoCancel;
  if (spec.name !== undefined) {
    // GitLab expands the name with the pipeline's variables, workflow rules' included.
    const scope = { ...context.predefined, ...toRecord(overlay(spec.variables, workflowVariables), context), ...context.variables };
    plan.name = expandVariables(spec.name, scope);
  }
  for (const job of spec.jobs) {
    // Workflow variables sit between the file's global variables and the job's own; `inherit:
    // variables` chooses which of both the job takes.
    const inherited = (list: Variables): Variables => list.filter((variable) => inherits(job, variable.key));
    const own = overlay(inherited(spec.variables), inherited(workflowVariables), job.variables.filter((variable) => !isGlobal(variable, spec.variables)));
    const scope = { ...context.predefined, ...jobVariables(job), ...toRecord(own, context), ...context.variables };
    const name = job.parallel?.name ?? job.name;
    const decision = await decideJob(job, spec.conditions[job.name] ?? {}, facts, scope).catch((error: unknown) => {
      throw placed(error, `jobs:${name} `, name);
    });
    plan.outcomes.push({ name: job.name, stage: job.stage, included: decision.included, when: decision.when, allowFailure: decision.allowFailure, reason: decision.reason });
    if (!decision.included || decision.when === 'never') continue;
    const chosen: JobSpec = { ...job, when: decision.when as JobWhen, allowFailure: decision.allowFailure, variables: overlay(own, decision.variables) };
    if (decision.startIn !== undefined) chosen.startIn = decision.startIn;
    if (decision.allowFailureByRule) delete chosen.allowFailureExitCodes;
    if (decision.needs !== undefined) chosen.needs = decision.needs.map((need) => ({ ...need }));
    if (decision.interruptible !== undefined) chosen.interruptible = decision.interruptible;
    plan.jobs.push(chosen);
  }
  const errors = new ConfigErrors();
  plan.jobs = keepChosenNeeds(plan.jobs, errors);
  checkChosenDependencies(plan, errors);
  errors.throwIfAny();
  return plan;
}

async function firstMatch(rules: NonNullable<PipelineSpec['workflow']>, facts: RuleFacts, scope: Record<string, string>) {
  for (const rule of rules) if (await ruleMatches(rule, facts, scope)) return rule;
  return undefined;
}

/** A job variable that is the global one unchanged (the job did not set its own). */
function isGlobal(variable: SpecVariable, globals: Variables): boolean {
  return globals.some((global) => global.key === variable.key && global.value === variable.value);
}

/** Whether `job` takes the global (or workflow) variable `key` (`inherit: variables`). */
function inherits(job: JobSpec, key: string): boolean {
  return job.inheritVariables === undefined || (job.inheritVariables !== false && job.inheritVariables.includes(key));
}

/** Later lists win over earlier ones, name by name; order of first appearance is kept. */
function overlay(...lists: Variables[]): Variables {
  // A Map keeps a key where it was first set.
  const result = new Map<string, SpecVariable>();
  for (const list of lists) for (const variable of list) result.set(variable.key, { ...variable });
  return [...result.values()];
}

/** File variables as rules see them: `$VAR` in their values expanded once, as GitLab does (not `expand: false` ones). */
function toRecord(variables: Variables, context: RuleContext): Record<string, string> {
  const scope = { ...context.predefined, ...context.variables };
  return Object.fromEntries(variables.map(({ key, value, raw }) => [key, raw ? value : expandVariables(value, scope)]));
}

/** An evaluation error (a `compare_to` that does not exist) said with the job or workflow it belongs to. */
function placed(error: unknown, prefix: string, job?: string): unknown {
  if (!(error instanceof PipelineConfigError)) return error;
  return new PipelineConfigError(`${prefix}${error.message}`, { ...(job === undefined ? {} : { job }), ...(error.key === undefined ? {} : { key: error.key }) }, { cause: error });
}

/** `dependencies:` may not name a job that the rules left out of this pipeline. */
function checkChosenDependencies(plan: PipelinePlan, errors: ConfigErrors): void {
  const chosen = new Set(plan.jobs.map((job) => job.name));
  for (const job of plan.jobs) {
    for (const dependency of job.dependencies ?? []) {
      if (chosen.has(dependency)) continue;
      const name = job.parallel?.name ?? job.name;
      errors.add(new PipelineConfigError(`jobs:${name} dependencies names '${dependency}', which the rules leave out of this pipeline`, { job: name, key: 'dependencies' }));
    }
  }
}
