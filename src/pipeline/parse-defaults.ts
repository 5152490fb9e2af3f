/**
 * What every job inherits: `default:` and the older top-level keys (`image`, `services`, `cache`,
 * `before_script`, `after_script`), plus the global `variables:`. A job's `inherit:` chooses which of
 * them it takes. Defaults are copied into a job's YAML before it is read, so a job key added later
 * (`retry`, `interruptible`) is inherited by the same path.
 */
import { childPath, configError, ConfigErrors, describePath, PipelineConfigError, type ConfigPath } from './parse-error.js';
import type { PipelineDefaults } from './parse-job.js';
import { DEFAULT_KEYWORDS, JOB_KEYWORDS } from './keywords.js';
import { readRetry } from './parse-runtime.js';
import { readIdTokens } from './parse-job-extras.js';
import type { SpecVariable } from './spec.js';
import { readHooks } from './parse-image-options.js';
import {
  checkKeys,
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
  id_tokens: readIdTokens,
  hooks: readHooks,
};

/** Reads `default:`, the old global keys and `variables:`; every problem is reported. */
export function readDefaults(root: YamlMap): Defaults {
  const errors = new ConfigErrors();
  const keys: YamlMap = {};
  const present = (map: YamlMap, key: string): boolean => map[key] !== undefined && map[key] !== null;
  const block = errors.attempt(() => (present(root, 'default') ? readMap(root.default, { key: 'default' }) : {})) ?? {};
  errors.attempt(() => checkKeys(block, DEFAULT_KEYWORDS, { key: 'default' }));
  for (const [key, value] of Object.entries(block)) {
    const path: ConfigPath = { key: `default:${key}` };
    if (DEFAULT_KEYWORDS[key] === undefined || DEFAULT_KEYWORDS[key].support.status === 'refused') continue;
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
  checkKeys(map, JOB_KEYWORDS.inherit?.keys ?? {}, path);
  for (const [key, raw] of Object.entries(map)) {
    const at = childPath(path, key);
    if (key !== 'default' && key !== 'variables') continue;
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
