/**
 * The reference server's `.gitlab-ci.yml` reader: YAML text in, a validated `PipelineSpec` out, or a
 * `PipelineConfigError` listing every problem, each naming its job and key. The steps follow GitLab:
 * includes merged (`include.ts`, the only step that reads files), then `extends`, then `!reference`,
 * then defaults, jobs, `parallel` copies. Which jobs a given pipeline runs is decided later, by
 * `selectJobs` (`select.ts`).
 */
import { RuleFacts } from './conditions.js';
import type { CommitFiles, RuleContext } from './context.js';
import { resolveExtends } from './extends.js';
import { resolveIncludes } from './include.js';
import { readDefaults, type Defaults } from './parse-defaults.js';
import { parseJobEntry } from './parse-entry.js';
import { configError, ConfigErrors, PipelineConfigError } from './parse-error.js';
import { checkKeys, readMap, readString, type YamlMap } from './parse-values.js';
import { GLOBAL_KEYWORDS, WORKFLOW_KEYWORDS } from './keywords.js';
import { notAppliedUses } from './keyword-notes.js';
import { resolveReferences } from './reference.js';
import { readAutoCancel, readRules } from './rules.js';
import type { AutoCancelSpec, InputValues, JobConditions, JobSpec, PipelineSpec, RuleSpec } from './spec.js';
import { loadYaml } from './yaml-load.js';
import { resolveJobNeeds, resolveNeeds } from './needs-graph.js';

export { PipelineConfigError } from './parse-error.js';

/** Top-level keys that configure the pipeline rather than name a job. */
const GLOBAL_KEYS = Object.keys(GLOBAL_KEYWORDS);

const DEFAULT_STAGES = ['build', 'test', 'deploy'];
/** Stages every pipeline has around the ones it lists (GitLab 12.4+). */
const EDGE_STAGES = { first: '.pre', last: '.post' };

/**
 * Parses and validates a pipeline that includes no other file. Jobs come out in file order; hidden
 * jobs (`.name`) are templates and never run. Throws `PipelineConfigError` (code `PIPELINE_INVALID`).
 */
export function parsePipeline(text: string): PipelineSpec {
  const warnings: string[] = [];
  const root = loadYaml(text, undefined, warnings);
  if (root.include !== undefined) {
    configError({ key: 'include' }, "needs the project's files: create the pipeline through the server (or ci-runner exec) to use include: local");
  }
  return withWarnings(parseConfig(root), warnings);
}

/**
 * `parsePipeline` for a file that may include others, read from `files` (the pipeline's commit).
 * `context` (the pipeline's ref, source, files) is needed by includes with `rules`.
 */
export async function readPipeline(
  text: string,
  options: { files: CommitFiles | undefined; variables: Readonly<Record<string, string>>; context?: RuleContext; inputs?: InputValues },
): Promise<PipelineSpec> {
  const facts = options.context === undefined ? undefined : new RuleFacts(options.context);
  const warnings: string[] = [];
  const root = loadYaml(text, undefined, warnings, { ...(options.inputs ? { values: options.inputs } : {}), variables: options.variables });
  const spec = parseConfig(await resolveIncludes(root, { files: options.files, variables: options.variables, facts, warnings }));
  return withWarnings(spec, warnings);
}

function withWarnings(spec: PipelineSpec, warnings: string[]): PipelineSpec {
  if (warnings.length > 0) spec.warnings = warnings;
  return spec;
}

/** The checks and reading that follow includes; every problem is collected before throwing. */
export function parseConfig(merged: YamlMap): PipelineSpec {
  const errors = new ConfigErrors();
  // Jobs whose extends or references failed are reported once, not read further.
  const broken = new Set<string>();
  const root = resolveReferences(resolveExtends(merged, GLOBAL_KEYS, errors, broken), GLOBAL_KEYS, errors, broken);
  const stages = errors.attempt(() => readStages(root)) ?? DEFAULT_STAGES;
  const defaults: Defaults = errors.attempt(() => readDefaults(root)) ?? { keys: {}, variables: [] };
  const workflow = root.workflow === undefined || root.workflow === null ? undefined : errors.attempt(() => readWorkflow(root.workflow));
  const notApplied = notAppliedUses(root);

  const jobs: JobSpec[] = [];
  const conditions: Record<string, JobConditions> = {};
  for (const [name, value] of Object.entries(root)) {
    if (GLOBAL_KEYS.includes(name) || name.startsWith('.') || broken.has(name)) continue;
    if (name.trim() === '') {
      errors.add(new PipelineConfigError('jobs a job name must not be empty', { key: 'jobs' }));
      continue;
    }
    const entry = errors.attempt(() => parseJobEntry(name, value, defaults));
    if (!entry) broken.add(name);
    for (const job of entry?.jobs ?? []) {
      jobs.push(job);
      conditions[job.name] = entry?.conditions ?? {};
    }
  }
  if (jobs.length === 0 && broken.size === 0) {
    throw new PipelineConfigError(
      "the pipeline has no jobs: add at least one job with a script (jobs whose names start with '.' are hidden and never run)",
    );
  }
  const allStages = [EDGE_STAGES.first, ...stages, EDGE_STAGES.last];
  expandParallelDependencies(jobs);
  for (const job of jobs) errors.attempt(() => checkStage(job, stages, allStages));
  // Checked against every job of the file here; against the jobs a pipeline's rules chose in `selectJobs`.
  const resolved = resolveNeeds(jobs, allStages, errors, broken);
  resolveRuleNeeds(jobs, conditions, allStages, errors, broken);
  checkDependencies(resolved, allStages, broken, errors, new Set(jobs.filter((job) => job.needs?.length === 0).map((job) => job.name)));
  errors.throwIfAny();
  const used = new Set(resolved.map((job) => job.stage));
  const spec: PipelineSpec = {
    stages: allStages.filter((stage) => stages.includes(stage) || used.has(stage)),
    jobs: resolved,
    variables: defaults.variables,
    conditions,
  };
  if (workflow?.rules !== undefined) spec.workflow = workflow.rules;
  if (workflow?.name !== undefined) spec.name = workflow.name;
  if (workflow?.autoCancel !== undefined) spec.autoCancel = workflow.autoCancel;
  if (notApplied.length > 0) spec.notApplied = notApplied;
  return spec;
}

/**
 * `rules: - needs:` resolved like a job's own needs, per job (a matrix copy resolves
 * `$[[ matrix.NAME ]]` with its own values), so each copy gets conditions of its own.
 */
function resolveRuleNeeds(jobs: readonly JobSpec[], conditions: Record<string, JobConditions>, stages: readonly string[], errors: ConfigErrors, broken: ReadonlySet<string>): void {
  for (const job of jobs) {
    const own = conditions[job.name];
    if (!own?.rules?.some((rule) => rule.needs !== undefined)) continue;
    const rules = own.rules.map((rule) => (rule.needs === undefined ? rule : { ...rule, needs: resolveJobNeeds(job, rule.needs, jobs, stages, errors, broken) }));
    conditions[job.name] = { ...own, rules };
  }
}

/** GitLab's limit on `workflow: name`. */
const MAX_PIPELINE_NAME = 255;

function readWorkflow(value: unknown): { rules?: RuleSpec[]; name?: string; autoCancel?: AutoCancelSpec } {
  const map = readMap(value, { key: 'workflow' });
  checkKeys(map, WORKFLOW_KEYWORDS, { key: 'workflow' });
  const workflow: { rules?: RuleSpec[]; name?: string; autoCancel?: AutoCancelSpec } = {};
  if (map.rules !== undefined && map.rules !== null) workflow.rules = readRules(map.rules, { key: 'workflow:rules' }, { of: 'workflow' });
  if (map.name !== undefined && map.name !== null) {
    workflow.name = readString(map.name, { key: 'workflow:name' });
    if (workflow.name.length > MAX_PIPELINE_NAME) configError({ key: 'workflow:name' }, `is longer than ${MAX_PIPELINE_NAME} characters`);
  }
  if (map.auto_cancel !== undefined && map.auto_cancel !== null) workflow.autoCancel = readAutoCancel(map.auto_cancel, { key: 'workflow:auto_cancel' });
  return workflow;
}

function readStages(root: YamlMap): string[] {
  if (root.stages !== undefined && root.types !== undefined) {
    configError({ key: 'types' }, 'cannot be used together with stages (types is the old name of stages)');
  }
  const key = root.stages !== undefined ? 'stages' : 'types';
  const value = root[key];
  if (value === undefined || value === null) return [...DEFAULT_STAGES];
  if (!Array.isArray(value) || value.length === 0 || !value.every((stage) => typeof stage === 'string' && stage !== '')) {
    configError({ key }, 'must be a non-empty list of stage names');
  }
  const stages = (value as string[]).filter((stage) => stage !== EDGE_STAGES.first && stage !== EDGE_STAGES.last);
  const duplicate = stages.find((stage, index) => stages.indexOf(stage) !== index);
  if (duplicate !== undefined) configError({ key }, `lists stage '${duplicate}' twice`);
  return stages;
}

function checkStage(job: JobSpec, stages: readonly string[], allStages: readonly string[]): void {
  if (allStages.includes(job.stage)) return;
  configError(
    { job: job.parallel?.name ?? job.name, key: 'stage' },
    `'${job.stage}' is not one of the pipeline's stages (${stages.join(', ')}); add it to stages: or pick one of those`,
  );
}

/** `dependencies: [build]` where `build` runs in `parallel` copies means all of them. */
function expandParallelDependencies(jobs: JobSpec[]): void {
  const copies = new Map<string, string[]>();
  for (const job of jobs) {
    if (job.parallel) copies.set(job.parallel.name, [...(copies.get(job.parallel.name) ?? []), job.name]);
  }
  for (const job of jobs) {
    if (job.dependencies) job.dependencies = job.dependencies.flatMap((name) => copies.get(name) ?? [name]);
  }
}

/**
 * A job may only name jobs of its own or earlier stages in `dependencies` (later ones have not run
 * yet), and, when it has `needs`, jobs it needs (GitLab: dependencies must then be a subset of needs).
 */
export function checkDependencies(
  jobs: readonly JobSpec[],
  stages: readonly string[],
  broken: ReadonlySet<string>,
  errors: ConfigErrors,
  emptyNeeds: ReadonlySet<string> = new Set(),
): void {
  const stageOf = new Map(jobs.map((job) => [job.name, stages.indexOf(job.stage)]));
  for (const job of jobs) {
    const own = stages.indexOf(job.stage);
    const at = { job: job.parallel?.name ?? job.name, key: 'dependencies' };
    for (const dependency of job.dependencies ?? []) {
      const other = stageOf.get(dependency);
      // A job refused for its own problems is reported once, not again by each job that uses it.
      if (broken.has(dependency)) continue;
      errors.attempt(() => {
        if (other === undefined) configError(at, `names '${dependency}', which is not a job of this pipeline`);
        // GitLab checks dependencies against needs only when there are needs; with `needs: []` a
        // job downloads nothing (dependencies then name nothing it receives).
        if (job.needs !== undefined && !emptyNeeds.has(job.name)) {
          if (!job.needs.some((need) => need.job === dependency)) {
            configError(at, `names '${dependency}', which is not in needs; with needs, a job can only use artifacts of jobs it needs`);
          }
          return;
        }
        // GitLab (same-stage needs, 14.2+): the current stage is allowed; its artifacts come only
        // through needs, as a stage-ordered job does not wait for jobs of its own stage.
        if (other > own) {
          configError(at, `names '${dependency}', which is in the later stage '${jobs.find((j) => j.name === dependency)?.stage ?? '?'}'; GitLab: dependency ${dependency} is not defined in current or prior stages`);
        }
      });
    }
  }
}
