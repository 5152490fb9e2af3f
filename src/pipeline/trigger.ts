/**
 * `trigger:` — a job that starts a downstream pipeline instead of running a script (GitLab's bridge
 * job). A child pipeline from this project's files (`include: local`) or from a file another job of
 * the pipeline produced (`include: artifact` with `job`) runs on this server, as GitLab runs it; a
 * multi-project pipeline (`trigger: group/project`, `project:`) and includes from elsewhere
 * (`template`, `remote`, `project`, `component`) are read, and the job is skipped with a note when it
 * runs (`server/state/bridges.ts`): the server has this project only.
 */
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readBoolean, readEnum, readString } from './parse-values.js';
import type { JobTriggerSpec, TriggerInclude } from './spec.js';
import { TRIGGER_INCLUDE_KEYWORDS, TRIGGER_KEYWORDS } from './keywords.js';
import { readInputValues } from './inputs.js';



/** Job keys a trigger job may have (it runs no script: no image, cache, artifacts, …). */
export const TRIGGER_JOB_KEYS = ['trigger', 'stage', 'type', 'variables', 'needs', 'rules', 'only', 'except', 'when', 'allow_failure', 'extends', 'inherit', 'environment', 'parallel', 'start_in', 'resource_group', 'interruptible'];

/** `trigger: group/project`, or `trigger: { include, project, branch, strategy, forward }`. */
export function readTrigger(value: unknown, path: ConfigPath): JobTriggerSpec {
  const spec: JobTriggerSpec = { depend: false, forward: { yamlVariables: true, pipelineVariables: false } };
  if (!isMap(value)) return { ...spec, project: readString(value, path) };
  checkKeys(value, TRIGGER_KEYWORDS, path);
  const at = (key: string): ConfigPath => childPath(path, key);
  const given = (key: string): boolean => value[key] !== undefined && value[key] !== null;
  if (given('include') === given('project')) configError(path, 'must have either include (a child pipeline) or project (a multi-project pipeline)');
  if (given('include')) spec.include = readIncludes(value.include, at('include'));
  if (given('project')) spec.project = readString(value.project, at('project'));
  if (given('branch')) spec.branch = readString(value.branch, at('branch'));
  // `mirror` (GitLab 18) mirrors the child's status as `depend` does; the difference (a running bridge while the child waits) is not visible locally.
  if (given('strategy')) spec.depend = ['depend', 'mirror'].includes(readEnum(value.strategy, ['depend', 'mirror'] as const, at('strategy')));
  if (given('forward')) {
    const forward = value.forward;
    if (!isMap(forward)) configError(at('forward'), 'must be a map with yaml_variables and pipeline_variables');
    checkKeys(forward, TRIGGER_KEYWORDS.forward?.keys ?? {}, at('forward'));
    if (forward.yaml_variables !== undefined) spec.forward.yamlVariables = readBoolean(forward.yaml_variables, childPath(at('forward'), 'yaml_variables'));
    if (forward.pipeline_variables !== undefined) spec.forward.pipelineVariables = readBoolean(forward.pipeline_variables, childPath(at('forward'), 'pipeline_variables'));
  }
  return spec;
}

/** `include: path.yml`, or a list of `local:`, `artifact:` + `job:`, and the kinds from elsewhere. */
function readIncludes(value: unknown, path: ConfigPath): TriggerInclude[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) configError(path, 'must name at least one file');
  return list.map((entry, index): TriggerInclude => {
    const at = Array.isArray(value) ? childPath(path, String(index)) : path;
    if (typeof entry === 'string') return { local: readString(entry, at) };
    if (!isMap(entry)) configError(at, 'must be a file path or a map with local, or artifact and job');
    checkKeys(entry, TRIGGER_INCLUDE_KEYWORDS, at);
    const inputs = entry.inputs === undefined || entry.inputs === null ? {} : { inputs: readInputValues(entry.inputs, childPath(at, 'inputs')) };
    if (entry.local !== undefined) return { local: readString(entry.local, childPath(at, 'local')), ...inputs };
    if (entry.artifact !== undefined) {
      return { artifact: readString(entry.artifact, childPath(at, 'artifact')), job: readString(entry.job, childPath(at, 'job')), ...inputs };
    }
    const kind = ['template', 'project', 'remote', 'component'].find((key) => entry[key] !== undefined);
    if (kind === undefined) configError(at, 'must have local, artifact (with job), template, project, remote or component');
    return { elsewhere: `${kind}: ${String(entry[kind])}` };
  });
}
