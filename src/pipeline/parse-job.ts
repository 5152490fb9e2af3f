/**
 * One job of a `.gitlab-ci.yml`: its keys checked and normalised into a `JobSpec`, with the global
 * defaults applied. Checks that need the other jobs (stages, dependencies) live in `parse.ts`.
 */
import { configError, type ConfigPath } from './parse-error.js';
import {
  checkKeys,
  readArtifacts,
  readBoolean,
  readCache,
  readImage,
  readImageEntrypoint,
  readImagePullPolicy,
  readMap,
  readScript,
  readServices,
  readServiceSpecs,
  readString,
  readStringList,
  readTimeout,
  readVariables,
  type YamlMap,
} from './parse-values.js';
import { readEnvironment } from './environment.js';
import { readExecutorOpts, readHooks, withServiceExtras } from './parse-image-options.js';
import { readAllowFailure, readCoverage, readNeeds, readRetry, readStartIn, readWhen } from './parse-runtime.js';
import { readTrigger, TRIGGER_JOB_KEYS } from './trigger.js';
import { JOB_KEYWORDS } from './keywords.js';
import { readIdTokens, readPages, readResourceGroup, readRunSteps } from './parse-job-extras.js';
import type { JobCacheSpec, JobSpec, SpecVariable } from './spec.js';

/** The global keys a job inherits unless it sets its own. */
export interface PipelineDefaults {
  beforeScript: string[];
  afterScript: string[];
  variables: SpecVariable[];
  /** The job's `inherit: variables` when not `true` (select.ts applies it to workflow variables too). */
  inheritVariables?: false | string[];
  image?: string;
  services: string[];
  cache?: JobCacheSpec[];
}

/** Job names the legacy API can carry: GitLab's own limit is 255 characters. */
const MAX_JOB_NAME = 255;

/** Parses job `name` (its raw YAML value) into a `JobSpec`; `stage` defaults to `test`. */
export function parseJob(name: string, raw: unknown, defaults: PipelineDefaults): JobSpec {
  const path: ConfigPath = { job: name, key: 'config' };
  if (name.length > MAX_JOB_NAME) configError(path, `name is too long (at most ${MAX_JOB_NAME} characters)`);
  if (raw === null || raw === undefined) configError({ job: name, key: 'script' }, 'is missing: a job needs a script');
  const job = readMap(raw, path);
  checkKeys(job, JOB_KEYWORDS, path);
  const at = (key: string): ConfigPath => ({ job: name, key });
  const has = (key: string): boolean => job[key] !== undefined && job[key] !== null;

  const { commands, afterScript } = has('trigger') ? noScript(job, name) : readScripts(job, at, has, defaults);

  if (has('stage') && has('type')) configError(at('type'), 'cannot be used together with stage (type is the old name of stage)');
  const stageKey = has('type') ? 'type' : 'stage';
  const stage = has(stageKey) ? readString(job[stageKey], at(stageKey)) : 'test';

  const spec: JobSpec = {
    name,
    stage,
    commands,
    afterScript,
    variables: mergeVariables(defaults.variables, has('variables') ? readVariables(job.variables, at('variables')) : []),
    services: has('services') ? readServices(job.services, at('services')) : [...defaults.services],
    tags: has('tags') ? readStringList(job.tags, at('tags')) : [],
    when: has('when') ? readWhen(job.when, at('when')) : 'on_success',
    allowFailure: false,
  };
  if (defaults.inheritVariables !== undefined) spec.inheritVariables = defaults.inheritVariables;
  // A manual job blocks nothing unless it says `allow_failure: false` (GitLab's default for it).
  const allowed = has('allow_failure') ? readAllowFailure(job.allow_failure, at('allow_failure')) : { allowed: spec.when === 'manual' };
  spec.allowFailure = allowed.allowed;
  if (allowed.exitCodes) spec.allowFailureExitCodes = allowed.exitCodes;
  readRuntimeKeys(spec, job, at, has);
  const image = has('image') ? readImage(job.image, at('image')) : defaults.image;
  if (image !== undefined) spec.image = image;
  const entrypoint = has('image') ? readImageEntrypoint(job.image, at('image')) : undefined;
  if (entrypoint !== undefined) spec.imageEntrypoint = entrypoint;
  const pullPolicy = has('image') ? readImagePullPolicy(job.image, at('image')) : undefined;
  if (pullPolicy !== undefined) spec.imagePullPolicy = pullPolicy;
  const executorOpts = has('image') ? readExecutorOpts(job.image, at('image')) : undefined;
  if (executorOpts !== undefined) spec.imageExecutorOpts = executorOpts;
  if (has('hooks')) spec.hooks = readHooks(job.hooks, at('hooks'));
  // The services' map keys matter to API v4 only; kept when some entry has more than a name.
  const serviceSpecs = has('services') ? withServiceExtras(readServiceSpecs(job.services, at('services')), job.services, at('services')) : [];
  if (serviceSpecs.some((service) => Object.keys(service).length > 1)) spec.serviceSpecs = serviceSpecs;
  if (has('artifacts')) spec.artifacts = readArtifacts(job.artifacts, at('artifacts'));
  const cache = has('cache') ? readCache(job.cache, at('cache')) : defaults.cache;
  if (cache !== undefined) spec.cache = cache.map((entry) => ({ ...entry }));
  // `dependencies:` left empty means "none", like `[]`; absent means "all earlier jobs".
  if (job.dependencies !== undefined) {
    spec.dependencies = job.dependencies === null ? [] : readStringList(job.dependencies, at('dependencies'));
  }
  if (has('timeout')) spec.timeout = readTimeout(job.timeout, at('timeout'));
  readExtraKeys(spec, job, at, has);
  return spec;
}

/** `before_script` (the job's, else the default) then `script`, and `after_script`. */
function readScripts(job: YamlMap, at: (key: string) => ConfigPath, has: (key: string) => boolean, defaults: PipelineDefaults): { commands: string[]; afterScript: string[] } {
  if (!has('script') && !has('run')) configError(at('script'), 'is missing: a job needs a script (or trigger: for a downstream pipeline)');
  if (has('script') && has('run')) configError(at('run'), 'cannot be used together with script: use one of them');
  const script = has('run') ? readRunSteps(job.run, at('run')) : readScript(job.script, at('script'), { allowEmpty: false });
  const beforeScript = has('before_script') ? readScript(job.before_script, at('before_script'), { allowEmpty: true }) : defaults.beforeScript;
  const afterScript = has('after_script') ? readScript(job.after_script, at('after_script'), { allowEmpty: true }) : defaults.afterScript;
  return { commands: [...beforeScript, ...script], afterScript: [...afterScript] };
}

/** A trigger job runs nothing itself: keys that only a script job has are refused, naming the job. */
function noScript(job: YamlMap, name: string): { commands: string[]; afterScript: string[] } {
  for (const key of Object.keys(job)) {
    if (!TRIGGER_JOB_KEYS.includes(key)) configError({ job: name, key }, `cannot be used with trigger: a trigger job runs no script of its own (it may have ${TRIGGER_JOB_KEYS.join(', ')})`);
  }
  return { commands: [], afterScript: [] };
}

/** The runtime keys (parse-runtime.ts) onto `spec`. */
function readRuntimeKeys(spec: JobSpec, job: Record<string, unknown>, at: (key: string) => ConfigPath, has: (key: string) => boolean): void {
  // GitLab refuses start_in next to rules: the rule that makes the job delayed carries it.
  if (has('rules') && has('start_in')) {
    configError(at('start_in'), 'may not be used with rules: put start_in in the rule that says when: delayed');
  }
  if (spec.when === 'delayed') {
    if (has('rules')) configError(at('when'), 'delayed may not be used with rules: put when: delayed and start_in in a rule');
    if (!has('start_in')) configError(at('start_in'), 'is missing: a job with when: delayed needs start_in (e.g. 30 minutes)');
    spec.startIn = readStartIn(job.start_in, at('start_in'));
  } else if (has('start_in')) {
    configError(at('start_in'), 'can only be used with when: delayed');
  }
  // `needs:` left empty means "nothing", like `[]`.
  if (job.needs !== undefined) spec.needs = readNeeds(job.needs, at('needs'));
  if (has('retry')) spec.retry = readRetry(job.retry, at('retry'));
  if (has('interruptible')) spec.interruptible = readBoolean(job.interruptible, at('interruptible'));
  if (has('coverage')) spec.coverage = readCoverage(job.coverage, at('coverage'));
  if (has('environment')) spec.environment = readEnvironment(job.environment, at('environment'));
  if (has('trigger')) spec.trigger = readTrigger(job.trigger, at('trigger'));
}

/** `resource_group`, `id_tokens`, `pages` (parse-job-extras.ts) onto `spec`. */
function readExtraKeys(spec: JobSpec, job: YamlMap, at: (key: string) => ConfigPath, has: (key: string) => boolean): void {
  if (has('resource_group')) spec.resourceGroup = readResourceGroup(job.resource_group, at('resource_group'));
  if (has('id_tokens')) spec.idTokens = readIdTokens(job.id_tokens, at('id_tokens'));
  const pages = readPages(spec.name, job, at);
  if (pages !== undefined) {
    spec.pages = pages;
    // GitLab adds the published directory to the job's artifacts.
    const paths = spec.artifacts?.paths ?? [];
    if (!paths.includes(pages.publish)) spec.artifacts = { ...spec.artifacts, paths: [...paths, pages.publish] };
  }
}

/** Global variables first, then the job's; a job variable replaces a global one of the same name. */
function mergeVariables(
  global: readonly SpecVariable[],
  own: readonly SpecVariable[],
): SpecVariable[] {
  const ownKeys = new Set(own.map((variable) => variable.key));
  return [...global.filter((variable) => !ownKeys.has(variable.key)), ...own].map((variable) => ({ ...variable }));
}
