/**
 * `needs:` across the pipeline, in GitLab's two steps. When the file is read (`resolveNeeds`): every
 * need names a job of the file (an `optional` one may name none and is dropped), of the same or an
 * earlier stage, and the needs form no cycle; a need on a `parallel` job names all its copies
 * (`test` → `test 1/3`, `test 2/3`, … or `test: [a, b]`). When the rules have chosen a pipeline's
 * jobs (`keepChosenNeeds`): a need on a job the rules left out is refused unless it is `optional`,
 * then dropped. Pure: jobs in, jobs with resolved needs out, problems collected in `ConfigErrors`.
 */
import { configError, ConfigErrors, PipelineConfigError } from './parse-error.js';
import type { JobNeed, JobSpec } from './spec.js';

/**
 * The jobs a need names: the job itself, else the copies of a `parallel` job of that name — by the
 * name they were written with, or by GitLab's names for copies (`test 1/3`, `test: [a, b]`).
 */
function instancesOf(name: string, jobs: readonly JobSpec[]): JobSpec[] {
  const exact = jobs.filter((job) => job.name === name);
  if (exact.length > 0) return exact;
  return jobs.filter((job) => {
    const copyOf = job.parallel?.name;
    if (copyOf !== undefined) return copyOf === name;
    const rest = job.name.startsWith(`${name} `) || job.name.startsWith(`${name}: [`) ? job.name.slice(name.length) : undefined;
    return rest !== undefined && (/^ \d+\/\d+$/.test(rest) || rest.startsWith(': ['));
  });
}

/** The job's name as written (a `parallel` copy's problems are the job's). */
function writtenName(job: JobSpec): string {
  return job.parallel?.name ?? job.name;
}

/**
 * Resolves and checks every job's `needs` against all jobs of the file; returns the jobs (new objects
 * where needs changed). Needs naming a job in `broken` (refused for its own problems) are not
 * reported again.
 */
export function resolveNeeds(jobs: readonly JobSpec[], stages: readonly string[], errors: ConfigErrors, broken: ReadonlySet<string> = new Set()): JobSpec[] {
  const resolved = jobs.map((job) => (job.needs === undefined ? job : { ...job, needs: resolveJobNeeds(job, job.needs, jobs, stages, errors, broken) }));
  errors.attempt(() => checkCycles(resolved));
  return resolved;
}

/**
 * `needs` of `job` (its own, or a rule's) as the names of the jobs they mean; each need that cannot be
 * resolved is recorded in `errors` and left out.
 */
export function resolveJobNeeds(job: JobSpec, written: readonly JobNeed[], jobs: readonly JobSpec[], stages: readonly string[], errors: ConfigErrors, broken: ReadonlySet<string> = new Set()): JobNeed[] {
  const needs: JobNeed[] = [];
  for (const need of written) {
    errors.attempt(() => {
      for (const target of targetsOf(job, need, jobs, stages, broken)) {
        if (!needs.some((other) => other.job === target.name)) needs.push({ job: target.name, artifacts: need.artifacts, optional: need.optional });
      }
    });
  }
  return needs;
}

/** `$[[ matrix.NAME ]]` in a need's matrix values: the needing copy's own value of NAME. */
const MATRIX_EXPRESSION = /\$\[\[\s*matrix\.([A-Za-z0-9_-]+)\s*\]\]/g;

/** The need's selectors with `$[[ matrix.NAME ]]` replaced by `job`'s own values. */
function selectorsOf(job: JobSpec, need: JobNeed, at: { job: string; key: string }): Array<Record<string, string[]>> {
  const own = job.parallel?.matrix;
  return (need.matrix ?? []).map((selector) =>
    Object.fromEntries(
      Object.entries(selector).map(([key, values]) => [
        key,
        values.map((value) =>
          value.replace(MATRIX_EXPRESSION, (expression, name: string) => {
            if (own === undefined) configError(at, `uses ${expression}, but '${writtenName(job)}' has no parallel: matrix: of its own`);
            const found = own[name];
            if (found === undefined) configError(at, `uses ${expression}, but '${name}' is not a variable of its own parallel: matrix: (${Object.keys(own).join(', ')})`);
            return found;
          }),
        ),
      ]),
    ),
  );
}

/** The copies of a matrix job that any selector matches (every variable a selector names has one of its values). */
function matrixTargets(job: JobSpec, need: JobNeed, candidates: readonly JobSpec[], at: { job: string; key: string }): JobSpec[] {
  if (!candidates.every((candidate) => candidate.parallel?.matrix !== undefined)) {
    configError(at, `names '${need.job}' with parallel: matrix:, but '${need.job}' is not a parallel: matrix: job`);
  }
  const selectors = selectorsOf(job, need, at);
  const chosen = candidates.filter((candidate) =>
    selectors.some((selector) => Object.entries(selector).every(([key, values]) => values.includes(candidate.parallel?.matrix?.[key] ?? '\u0000'))),
  );
  if (chosen.length === 0 && !need.optional) {
    const wanted = selectors.map((selector) => Object.entries(selector).map(([key, values]) => `${key}: ${values.join(' | ')}`).join(', ')).join('; ');
    configError(at, `names '${need.job}' with parallel: matrix: ${wanted}, which matches none of its copies; add optional: true if that may happen`);
  }
  return chosen;
}

function targetsOf(job: JobSpec, need: JobNeed, jobs: readonly JobSpec[], stages: readonly string[], broken: ReadonlySet<string>): JobSpec[] {
  const at = { job: writtenName(job), key: 'needs' };
  let targets = instancesOf(need.job, jobs);
  if (targets.length === 0) {
    if (need.optional || broken.has(need.job)) return [];
    configError(at, `names '${need.job}', which is not a job of this pipeline`);
  }
  if (need.matrix !== undefined) targets = matrixTargets(job, need, targets, at);
  for (const target of targets) {
    if (target.name === job.name) configError(at, `names the job itself ('${job.name}')`);
    if (stages.indexOf(target.stage) > stages.indexOf(job.stage)) {
      configError(at, `names '${target.name}', which is in the later stage '${target.stage}'; a job can only need jobs of its own or earlier stages`);
    }
  }
  return targets;
}

/**
 * The chosen jobs with needs on jobs the rules left out dropped when `optional`, refused otherwise
 * (GitLab: "needs 'x', but 'x' is not in any previous stage"), each refusal recorded in `errors`.
 */
export function keepChosenNeeds(jobs: readonly JobSpec[], errors: ConfigErrors): JobSpec[] {
  const chosen = new Set(jobs.map((job) => job.name));
  const kept = jobs.map((job) => {
    if (job.needs === undefined || job.needs.every((need) => chosen.has(need.job))) return job;
    const name = writtenName(job);
    for (const need of job.needs) {
      if (chosen.has(need.job) || need.optional) continue;
      errors.add(
        new PipelineConfigError(
          `jobs:${name} needs names '${need.job}', which the rules leave out of this pipeline; add optional: true if it may be absent`,
          { job: name, key: 'needs' },
        ),
      );
    }
    return { ...job, needs: job.needs.filter((need) => chosen.has(need.job)) };
  });
  return kept;
}

/** Depth-first search for a cycle; the message shows it (`a → b → a`). */
function checkCycles(jobs: readonly JobSpec[]): void {
  const byName = new Map(jobs.map((job) => [job.name, job]));
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, trail: string[]): void => {
    const mark = state.get(name);
    if (mark === 'done') return;
    if (mark === 'visiting') {
      const cycle = [...trail.slice(trail.indexOf(name)), name];
      configError({ job: name, key: 'needs' }, `forms a cycle: ${cycle.join(' → ')}; a job cannot (indirectly) need itself`);
    }
    state.set(name, 'visiting');
    for (const need of byName.get(name)?.needs ?? []) visit(need.job, [...trail, name]);
    state.set(name, 'done');
  };
  for (const job of jobs) visit(job.name, []);
}
