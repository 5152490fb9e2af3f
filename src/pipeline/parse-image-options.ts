/**
 * The `.gitlab-ci.yml` keys that only the runner acts on (GitLab passes them through in the job
 * payload): `hooks:` (`pre_get_sources_script`, the one hook GitLab's `Entry::Hooks` allows), an
 * image's or service's executor options (`docker: { platform, user }`, `kubernetes: { user }`, sent as
 * `executor_opts`), and a service's own `variables:`.
 */
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readMap, readScript, readString, readVariables } from './parse-values.js';
import type { ExecutorOptsSpec, HooksSpec, JobServiceSpec, SpecVariable } from './spec.js';

/** `hooks: { pre_get_sources_script: [...] }`. */
export function readHooks(value: unknown, path: ConfigPath): HooksSpec {
  const map = readMap(value, path);
  checkKeys(map, ['pre_get_sources_script'], path);
  const pre = map.pre_get_sources_script;
  return pre === undefined || pre === null ? {} : { preGetSourcesScript: readScript(pre, childPath(path, 'pre_get_sources_script'), { allowEmpty: true }) };
}

/** A user as GitLab takes it: a name or uid, with an optional `:group`; a number is its text. */
function readUser(value: unknown, path: ConfigPath): string {
  const user = typeof value === 'number' && Number.isInteger(value) && value >= 0 ? String(value) : readString(value, path);
  if (user === '' || /[\s\u0000-\u001f]/.test(user)) configError(path, 'must be a user name or uid, optionally with :group');
  return user;
}

/** An image's or service's `docker:` and `kubernetes:` options; undefined when it has none. */
export function readExecutorOpts(image: unknown, path: ConfigPath): ExecutorOptsSpec | undefined {
  if (!isMap(image)) return undefined;
  const opts: ExecutorOptsSpec = {};
  if (image.docker !== undefined && image.docker !== null) {
    const at = childPath(path, 'docker');
    const docker = readMap(image.docker, at);
    checkKeys(docker, ['platform', 'user'], at);
    opts.docker = {};
    if (docker.platform !== undefined && docker.platform !== null) opts.docker.platform = readString(docker.platform, childPath(at, 'platform'));
    if (docker.user !== undefined && docker.user !== null) opts.docker.user = readUser(docker.user, childPath(at, 'user'));
  }
  if (image.kubernetes !== undefined && image.kubernetes !== null) {
    const at = childPath(path, 'kubernetes');
    const kubernetes = readMap(image.kubernetes, at);
    checkKeys(kubernetes, ['user'], at);
    opts.kubernetes = {};
    if (kubernetes.user !== undefined && kubernetes.user !== null) opts.kubernetes.user = readUser(kubernetes.user, childPath(at, 'user'));
  }
  return opts.docker || opts.kubernetes ? opts : undefined;
}

/** A service's own `variables:` (a map of names to values, as a job's). */
export function readServiceVariables(value: unknown, path: ConfigPath): SpecVariable[] {
  return readVariables(value, path).map((variable) => ({ key: variable.key, value: variable.value }));
}

/** `specs` (readServiceSpecs of `value`) with each entry's own `variables:` and executor options. */
export function withServiceExtras(specs: JobServiceSpec[], value: unknown, path: ConfigPath): JobServiceSpec[] {
  if (!Array.isArray(value)) return specs;
  return specs.map((spec, index) => {
    const item: unknown = value[index];
    if (!isMap(item)) return spec;
    const at = childPath(path, String(index));
    const extra: JobServiceSpec = { ...spec };
    if (item.variables !== undefined && item.variables !== null) extra.variables = readServiceVariables(item.variables, childPath(at, 'variables'));
    const opts = readExecutorOpts(item, at);
    if (opts) extra.executorOpts = opts;
    return extra;
  });
}
