/**
 * Which jobs of a pipeline `exec` runs: all of them, or those named (`JOB…`), those of `--stage`, and
 * with `--needs` everything they depend on, transitively: what a job `needs:`, or for a job without
 * `needs:` every job of the earlier stages (what it waits for). A job that is left out is also taken out of the
 * `needs` and `dependencies` of the jobs that stay, so they start without it (as a job whose needs are
 * done) instead of waiting for a job that never comes. Pure: no I/O.
 */
import { CiRunnerError } from '../util/errors.js';
import type { JobNeed, JobSpec, PipelineSpec } from '../pipeline/spec.js';

export interface JobSelection {
  /** Job names; empty with no stages = every job. */
  jobs: readonly string[];
  stages: readonly string[];
  /** Also run what the selected jobs depend on (`needs`, else the earlier stages), transitively. */
  withNeeds: boolean;
  /** The executor named by GitLab Runner's form `exec EXECUTOR JOB…`, already taken off `jobs`. */
  executorWord?: string;
}

/** GitLab Runner's other executors: a user of its `exec EXECUTOR JOB` form may name one. */
const OTHER_EXECUTORS = new Set(['kubernetes', 'ssh', 'virtualbox', 'parallels', 'custom', 'docker-ssh', 'docker+machine', 'docker-windows', 'instance']);

/** Names that match no job, or a stage with no jobs: exit 2 (usage). */
export class JobSelectionError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('EXEC_NO_SUCH_JOB', message);
  }
}

/** The `needs` of a job, or undefined when it has none (stage order applies). */
export function needsOf(job: JobSpec): readonly JobNeed[] | undefined {
  return job.needs;
}

/** The selected part of `spec`; the whole of it when nothing is named. Throws `JobSelectionError`. */
export function selectJobs(spec: PipelineSpec, selection: JobSelection): PipelineSpec {
  if (selection.jobs.length === 0 && selection.stages.length === 0) return spec;
  const byName = new Map(spec.jobs.map((job) => [job.name, job]));
  const word = selection.executorWord;
  if (word !== undefined && byName.has(word)) {
    const jobs = selection.jobs.join(' ');
    throw new JobSelectionError(`'${word}' names both a job of this pipeline and an executor: write \`exec --executor ${word} ${jobs}\` to run ${jobs} with the ${word} executor, or \`exec ${jobs} ${word}\` to run job ${word} too`);
  }
  const missing = selection.jobs.filter((name) => !byName.has(name));
  if (missing.length > 0) {
    const known = spec.jobs.map((job) => job.name).join(', ');
    const executor = missing.find((name) => OTHER_EXECUTORS.has(name));
    const hint = executor === undefined ? '' : `; '${executor}' is an executor exec does not run (it has shell and docker: \`exec docker JOB\`)`;
    throw new JobSelectionError(`no job ${missing.map((name) => `'${name}'`).join(', ')} in this pipeline (after rules); its jobs: ${known}${hint}`);
  }
  const emptyStages = selection.stages.filter((stage) => !spec.jobs.some((job) => job.stage === stage));
  if (emptyStages.length > 0) {
    throw new JobSelectionError(`no job in stage ${emptyStages.map((s) => `'${s}'`).join(', ')} (after rules); stages: ${spec.stages.join(', ')}`);
  }
  const chosen = new Set<string>(selection.jobs);
  for (const job of spec.jobs) if (selection.stages.includes(job.stage)) chosen.add(job.name);
  if (selection.withNeeds) addNeeds(chosen, byName, spec.stages);
  const jobs = spec.jobs.filter((job) => chosen.has(job.name)).map((job) => withoutLeftOut(job, chosen));
  return { ...spec, jobs };
}

/** Adds what the chosen jobs depend on, and what that depends on, until nothing is added. */
function addNeeds(chosen: Set<string>, byName: ReadonlyMap<string, JobSpec>, stages: readonly string[]): void {
  const queue = [...chosen];
  for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
    for (const other of dependsOn(byName.get(name) as JobSpec, byName, stages)) {
      if (chosen.has(other)) continue;
      chosen.add(other);
      queue.push(other);
    }
  }
}

/** The jobs `job` waits for: those it needs, or without `needs:` every job of an earlier stage. */
function dependsOn(job: JobSpec, byName: ReadonlyMap<string, JobSpec>, stages: readonly string[]): string[] {
  const needs = needsOf(job);
  if (needs !== undefined) return needs.map((need) => need.job).filter((name) => byName.has(name));
  const own = stages.indexOf(job.stage);
  return [...byName.values()].filter((other) => stages.indexOf(other.stage) < own).map((other) => other.name);
}

function withoutLeftOut(job: JobSpec, chosen: ReadonlySet<string>): JobSpec {
  const needs = needsOf(job);
  const copy: JobSpec = { ...job };
  // Entries are kept as the engine made them; only the list is shortened.
  if (needs !== undefined) copy.needs = needs.filter((need) => chosen.has(need.job));
  if (job.dependencies !== undefined) copy.dependencies = job.dependencies.filter((name) => chosen.has(name));
  return copy;
}
