/**
 * The reference server's `.gitlab-ci.yml` reader: YAML text in, a validated `PipelineSpec` out, or a
 * `PipelineConfigError` naming the job and key at fault. Pure (no I/O), so a pipeline is refused before
 * anything is queued. The supported subset is the one GitLab 8.x offered the v1 runner API (issue #2).
 */
import { parseDocument } from 'yaml';
import { configError, PipelineConfigError } from './parse-error.js';
import { parseJob, type PipelineDefaults } from './parse-job.js';
import { isMap, readCache, readImage, readScript, readServices, readVariables, type YamlMap } from './parse-values.js';
import { resolveNeeds } from './needs-graph.js';
import type { JobSpec, PipelineSpec } from './spec.js';

export { PipelineConfigError } from './parse-error.js';

/** Top-level keys that configure the pipeline rather than name a job. */
const GLOBAL_KEYS = ['stages', 'types', 'variables', 'before_script', 'after_script', 'image', 'services', 'cache'];

/** Reserved by GitLab but outside our subset: refused, so a job is never silently missing. */
const UNSUPPORTED_GLOBAL_KEYS = ['include', 'default', 'workflow'];

const DEFAULT_STAGES = ['build', 'test', 'deploy'];

/**
 * Parses and validates a pipeline. Jobs come out in file order; hidden jobs (`.name`) are templates for
 * anchors and never run. Throws `PipelineConfigError` (code `PIPELINE_INVALID`) on any problem.
 */
export function parsePipeline(text: string): PipelineSpec {
  const root = loadYaml(text);
  const stages = readStages(root);
  const defaults = readDefaults(root);

  const jobs: JobSpec[] = [];
  for (const [name, value] of Object.entries(root)) {
    if (GLOBAL_KEYS.includes(name) || name.startsWith('.')) continue;
    if (UNSUPPORTED_GLOBAL_KEYS.includes(name)) {
      configError({ key: name }, 'is not supported by the ci-runner reference server; put everything in this one file');
    }
    if (name.trim() === '') configError({ key: 'jobs' }, 'a job name must not be empty');
    jobs.push(parseJob(name, value, defaults));
  }
  if (jobs.length === 0) {
    throw new PipelineConfigError(
      "the pipeline has no jobs: add at least one job with a script (jobs whose names start with '.' are hidden and never run)",
    );
  }
  checkStages(jobs, stages);
  const resolved = resolveNeeds(jobs, stages);
  checkDependencies(resolved, stages);
  return { stages, jobs: resolved };
}

function loadYaml(text: string): YamlMap {
  // Merge keys (`<<: *defaults`) are YAML 1.1, but every .gitlab-ci.yml relies on them.
  const doc = parseDocument(text, { merge: true, prettyErrors: true });
  const [error] = doc.errors;
  if (error !== undefined) {
    const position = error.linePos?.[0];
    const reason = (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, '');
    const where = position === undefined ? '' : ` at line ${position.line}, column ${position.col}`;
    throw new PipelineConfigError(`invalid YAML${where}: ${reason}`, {}, { cause: error });
  }
  let value: unknown;
  try {
    // The alias limit guards against "billion laughs" documents that expand to gigabytes.
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    throw new PipelineConfigError(`invalid YAML: ${(cause as Error).message}`, {}, { cause });
  }
  if (value === null || value === undefined) {
    throw new PipelineConfigError('the pipeline is empty: add at least one job with a script');
  }
  if (!isMap(value)) {
    throw new PipelineConfigError('the pipeline must be a YAML map of job names (and global keys) to their settings');
  }
  return value;
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
  const stages = value as string[];
  const duplicate = stages.find((stage, index) => stages.indexOf(stage) !== index);
  if (duplicate !== undefined) configError({ key }, `lists stage '${duplicate}' twice`);
  return stages;
}

function readDefaults(root: YamlMap): PipelineDefaults {
  const present = (key: string): boolean => root[key] !== undefined && root[key] !== null;
  const defaults: PipelineDefaults = {
    beforeScript: present('before_script') ? readScript(root.before_script, { key: 'before_script' }, { allowEmpty: true }) : [],
    afterScript: present('after_script') ? readScript(root.after_script, { key: 'after_script' }, { allowEmpty: true }) : [],
    variables: present('variables') ? readVariables(root.variables, { key: 'variables' }) : [],
    services: present('services') ? readServices(root.services, { key: 'services' }) : [],
  };
  if (present('image')) defaults.image = readImage(root.image, { key: 'image' });
  if (present('cache')) defaults.cache = readCache(root.cache, { key: 'cache' });
  return defaults;
}

function checkStages(jobs: readonly JobSpec[], stages: readonly string[]): void {
  for (const job of jobs) {
    if (!stages.includes(job.stage)) {
      configError(
        { job: job.name, key: 'stage' },
        `'${job.stage}' is not one of the pipeline's stages (${stages.join(', ')}); add it to stages: or pick one of those`,
      );
    }
  }
}

/**
 * A job may only take artifacts from jobs of earlier stages (later ones have not run yet), or, when
 * it has `needs`, from jobs it needs (GitLab: dependencies must then be a subset of needs).
 */
function checkDependencies(jobs: readonly JobSpec[], stages: readonly string[]): void {
  const stageOf = new Map(jobs.map((job) => [job.name, stages.indexOf(job.stage)]));
  for (const job of jobs) {
    const own = stages.indexOf(job.stage);
    for (const dependency of job.dependencies ?? []) {
      const other = stageOf.get(dependency);
      const at = { job: job.name, key: 'dependencies' };
      if (other === undefined) configError(at, `names '${dependency}', which is not a job of this pipeline`);
      if (job.needs !== undefined) {
        if (!job.needs.some((need) => need.job === dependency)) {
          configError(at, `names '${dependency}', which is not in needs; with needs, a job can only use artifacts of jobs it needs`);
        }
        continue;
      }
      if (other >= own) {
        configError(at, `names '${dependency}', which is not in a stage before '${job.stage}'; a job can only use artifacts of earlier stages`);
      }
    }
  }
}
