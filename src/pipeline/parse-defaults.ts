/**
 * What every job inherits: `default:` and the older top-level keys (`image`, `services`, `cache`,
 * `before_script`, `after_script`), plus the global `variables:`. A job's `inherit:` chooses which of
 * them it takes. Defaults are copied into a job's YAML before it is read, so a job key added later
 * (`retry`, `interruptible`) is inherited by the same path.
 */
import { childPath, configError, ConfigErrors, describePath, PipelineConfigError, type ConfigPath } from './parse-error.js';
import { JOB_KEYS, type PipelineDefaults } from './parse-job.js';
import { readRetry } from './parse-runtime.js';
import type { SpecVariable } from './spec.js';
import { readHooks } from './parse-image-options.js';
import {
  isMap,
  readArtifacts,
  readBoolean,
  readCache,
  readImage,
  readMap,
  readScript,
  readServices,
  readStringList,
  readTimeout,
  readVariables,
  type YamlMap,
} from './parse-values.js';

/** GitLab's `default:` keywords, as far as jobs here support them. */
const GITLAB_DEFAULT_KEYS = ['after_script', 'artifacts', 'before_script', 'cache', 'hooks', 'id_tokens', 'image', 'interruptible', 'retry', 'services', 'tags', 'timeout'];
export const DEFAULT_KEYS: readonly string[] = GITLAB_DEFAULT_KEYS.filter((key) => (JOB_KEYS as readonly string[]).includes(key));
/** Top-level keys from before `default:` existed; each may be set there or in `default:`, not both. */
const OLD_GLOBAL_KEYS = ['before_script', 'after_script', 'image', 'services', 'cache'];

export interface Defaults {
  /** Job keys to copy into jobs that do not set them, as written. */
  keys: YamlMap;
  variables: SpecVariable[];
}

const VALIDATORS: Readonly<Record<string, (value: unknown, path: ConfigPath) => unknown>> = {
  after_script: (value, path) => readScript(value, path, { allowEmpty: true }),
  before_script: (value, path) => readScript(value, path, { allowEmpty: true }),
  artifacts: readArtifacts,
  cache: readCache,
  image: readImage,
  services: readServices,
  tags: readStringList,
  timeout: readTimeout,
  retry: readRetry,
  interruptible: readBoolean,
  hooks: readHooks,
};

/** Reads `default:`, the old global keys and `variables:`; every problem is reported. */
export function readDefaults(root: YamlMap): Defaults {
  const errors = new ConfigErrors();
  const keys: YamlMap = {};
  const present = (map: YamlMap, key: string): boolean => map[key] !== undefined && map[key] !== null;
  const block = errors.attempt(() => (present(root, 'default') ? readMap(root.default, { key: 'default' }) : {})) ?? {};
  for (const [key, value] of Object.entries(block)) {
    const path: ConfigPath = { key: `default:${key}` };
    if (!DEFAULT_KEYS.includes(key)) {
      errors.add(errorAt(path, `is not a supported key (supported: ${DEFAULT_KEYS.join(', ')})`));
      continue;
    }
    if (value === null || value === undefined) continue;
    if (errors.attempt(() => VALIDATORS[key]?.(value, path) ?? true) !== undefined) keys[key] = value;
  }
  for (const key of OLD_GLOBAL_KEYS) {
    if (!present(root, key)) continue;
    if (present(block, key)) {
      errors.add(errorAt({ key }, `is set both at the top level and in default:; keep only default:${key}`));
      continue;
    }
    if (errors.attempt(() => VALIDATORS[key]?.(root[key], { key })) !== undefined) keys[key] = root[key];
  }
  const variables = errors.attempt(() => (present(root, 'variables') ? readVariables(root.variables, { key: 'variables' }) : [])) ?? [];
  errors.throwIfAny();
  return { keys, variables };
}

function errorAt(path: ConfigPath, problem: string): PipelineConfigError {
  return new PipelineConfigError(`${describePath(path)} ${problem}`, path);
}

/** `inherit: { default: true | false | [keys], variables: true | false | [names] }`. */
interface Inherit {
  default: boolean | string[];
  variables: boolean | string[];
}

function readInherit(value: unknown, path: ConfigPath): Inherit {
  const inherit: Inherit = { default: true, variables: true };
  if (value === undefined || value === null) return inherit;
  const map = readMap(value, path);
  for (const [key, raw] of Object.entries(map)) {
    const at = childPath(path, key);
    if (key !== 'default' && key !== 'variables') configError(at, 'is not a supported key (supported: default, variables)');
    inherit[key] = typeof raw === 'boolean' ? readBoolean(raw, at) : readStringList(raw, at);
  }
  return inherit;
}

/**
 * `job` with the defaults it inherits filled in, and the global variables it takes (for
 * `parseJob`). The job's own keys always win, whole: defaults are not merged into them.
 */
export function applyDefaults(name: string, job: unknown, defaults: Defaults): { job: unknown; defaults: PipelineDefaults } {
  const inherited: PipelineDefaults = { beforeScript: [], afterScript: [], variables: defaults.variables, services: [] };
  if (!isMap(job)) return { job, defaults: inherited };
  const inherit = readInherit(job.inherit, { job: name, key: 'inherit' });
  const takes = (choice: boolean | string[], key: string): boolean => (typeof choice === 'boolean' ? choice : choice.includes(key));
  const filled: YamlMap = { ...job };
  // A trigger job runs no script: `default:` (image, before_script, …) is for the jobs that do.
  const takesDefaults = job.trigger === undefined || job.trigger === null;
  for (const [key, value] of takesDefaults ? Object.entries(defaults.keys) : []) {
    if ((filled[key] === undefined || filled[key] === null) && takes(inherit.default, key)) filled[key] = value;
  }
  inherited.variables = defaults.variables.filter((variable) => takes(inherit.variables, variable.key));
  if (inherit.variables !== true) inherited.inheritVariables = inherit.variables;
  return { job: filled, defaults: inherited };
}
