/**
 * One job entry of the (merged) configuration: defaults filled in, read by `parseJob`, its conditions
 * (`rules`, `only`, `except`) and `parallel` copies. Every problem of the job is reported, not only
 * the first: after a refusal the job is read again without the faulty key.
 */
import { readPolicy } from './only-except.js';
import { applyDefaults, type Defaults } from './parse-defaults.js';
import { ConfigErrors, PipelineConfigError, type ConfigPath } from './parse-error.js';
import { parseJob } from './parse-job.js';
import { expandParallel, readParallel, type ParallelCopy } from './parallel.js';
import { isMap, readBoolean, type YamlMap } from './parse-values.js';
import { readRules } from './rules.js';
import { JOB_KEYWORDS } from './keywords.js';
import type { JobConditions, JobSpec } from './spec.js';

export interface ParsedEntry {
  /** One job, or its `parallel` copies. */
  jobs: JobSpec[];
  conditions: JobConditions;
}

/** A job with this many faulty keys stops being re-read: the rest is reported on the next try. */
const MAX_PROBLEMS_PER_JOB = 20;

export function parseJobEntry(name: string, raw: unknown, defaults: Defaults): ParsedEntry {
  const errors = new ConfigErrors();
  const filled = errors.attempt(() => applyDefaults(name, raw, defaults));
  const job = errors.attempt(() => parseAllKeys(name, filled?.job ?? raw, filled?.defaults ?? { beforeScript: [], afterScript: [], variables: [], services: [] }));
  const map: YamlMap = isMap(raw) ? raw : {};
  const at = (key: string): ConfigPath => ({ job: name, key });
  const has = (key: string): boolean => map[key] !== undefined && map[key] !== null;
  const conditions: JobConditions = {};
  if (has('rules') && (has('only') || has('except'))) {
    errors.add(new PipelineConfigError(`jobs:${name} rules cannot be used together with only or except; use rules alone`, at('rules')));
  }
  if (has('rules')) assign(conditions, 'rules', errors.attempt(() => readRules(map.rules, at('rules'), { of: 'job' })));
  if (has('only')) assign(conditions, 'only', errors.attempt(() => readPolicy(map.only, at('only'))));
  if (has('except')) assign(conditions, 'except', errors.attempt(() => readPolicy(map.except, at('except'))));
  if (has('allow_failure') && typeof map.allow_failure === 'boolean') conditions.allowFailure = readBoolean(map.allow_failure, at('allow_failure'));
  // `exit_codes` is written: a failure with another status fails, whatever a rule's `when: manual` says.
  else if (has('allow_failure') && isMap(map.allow_failure)) conditions.allowFailure = false;
  let copies: ParallelCopy[] | undefined;
  if (has('parallel')) copies = errors.attempt(() => readParallel(map.parallel, at('parallel')));
  errors.throwIfAny();
  if (!job) throw new Error(`job ${name} was neither read nor refused`);
  // GitLab: a job that is manual by its own `when` may fail without failing the pipeline.
  if (job.when === 'manual' && conditions.allowFailure === undefined) job.allowFailure = true;
  return { jobs: copies ? expandParallel(job, copies) : [job], conditions };
}

function assign<K extends keyof JobConditions>(conditions: JobConditions, key: K, value: JobConditions[K] | undefined): void {
  if (value !== undefined) conditions[key] = value;
}

/** `parseJob`, repeated without each key it refuses, so that every faulty key is reported. */
function parseAllKeys(name: string, raw: unknown, defaults: Parameters<typeof parseJob>[2]): JobSpec {
  const errors = new ConfigErrors();
  let current = raw;
  // Keys that are not GitLab's are reported together, as GitLab does, and the job is read without them.
  const unknown = isMap(raw) ? Object.keys(raw).filter((key) => !Object.hasOwn(JOB_KEYWORDS, key)) : [];
  if (unknown.length > 0 && isMap(raw)) {
    errors.add(new PipelineConfigError(`jobs:${name} config contains unknown keys: ${unknown.join(', ')}`, { job: name, key: unknown[0] ?? 'config' }));
    current = Object.fromEntries(Object.entries(raw).filter(([key]) => !unknown.includes(key)));
  }
  let job: JobSpec | undefined;
  for (let attempt = 0; attempt < MAX_PROBLEMS_PER_JOB && job === undefined; attempt += 1) {
    try {
      job = parseJob(name, current, defaults);
    } catch (error) {
      if (!(error instanceof PipelineConfigError)) throw error;
      errors.add(error);
      const key = error.key?.split(':')[0];
      // A missing or broken script, or a job that is not a map, leaves nothing to read further.
      if (key === undefined || key === 'script' || key === 'config' || !isMap(current) || !Object.hasOwn(current, key)) break;
      const { [key]: _dropped, ...rest } = current;
      current = rest;
    }
  }
  errors.throwIfAny();
  if (job === undefined) throw new Error(`job ${name} was neither read nor refused`);
  return job;
}
