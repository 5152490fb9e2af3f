/**
 * `needs:` across the whole pipeline: every need names a job of this pipeline (an `optional` one may
 * name none and is dropped), in the same or an earlier stage, and the needs form no cycle. A need on a
 * `parallel` job names all its instances (`test` → `test 1/3`, `test 2/3`, … or `test: [a, b]`), as
 * GitLab does. Pure: jobs in, jobs with resolved needs out, or a `PipelineConfigError`.
 */
import { configError } from './parse-error.js';
import type { JobNeed, JobSpec } from './spec.js';

/** A `parallel` copy knows the name it was written with (the engine's `parallel.name`). */
type MaybeCopy = JobSpec & { parallel?: { name: string } };

/**
 * The jobs a need names: the job itself, else the copies of a `parallel` job of that name — by the
 * name they were written with, or by GitLab's names for copies (`test 1/3`, `test: [a, b]`).
 */
function instancesOf(name: string, jobs: readonly JobSpec[]): JobSpec[] {
  const exact = jobs.filter((job) => job.name === name);
  if (exact.length > 0) return exact;
  return jobs.filter((job) => {
    const copyOf = (job as MaybeCopy).parallel?.name;
    if (copyOf !== undefined) return copyOf === name;
    const rest = job.name.startsWith(`${name} `) || job.name.startsWith(`${name}: [`) ? job.name.slice(name.length) : undefined;
    return rest !== undefined && (/^ \d+\/\d+$/.test(rest) || rest.startsWith(': ['));
  });
}

/** Resolves and checks every job's `needs`; returns the jobs (new objects where needs changed). */
export function resolveNeeds(jobs: readonly JobSpec[], stages: readonly string[]): JobSpec[] {
  const resolved = jobs.map((job) => {
    if (job.needs === undefined) return job;
    const at = { job: job.name, key: 'needs' };
    const needs: JobNeed[] = [];
    for (const need of job.needs) {
      const targets = instancesOf(need.job, jobs);
      if (targets.length === 0) {
        if (need.optional) continue;
        configError(at, `names '${need.job}', which is not a job of this pipeline (after rules); add optional: true if it may be absent`);
      }
      for (const target of targets) {
        if (target.name === job.name) configError(at, `names the job itself ('${job.name}')`);
        if (stages.indexOf(target.stage) > stages.indexOf(job.stage)) {
          configError(at, `names '${target.name}', which is in the later stage '${target.stage}'; a job can only need jobs of its own or earlier stages`);
        }
        if (!needs.some((other) => other.job === target.name)) needs.push({ ...need, job: target.name });
      }
    }
    return { ...job, needs };
  });
  checkCycles(resolved);
  return resolved;
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
