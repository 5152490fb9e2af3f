/**
 * A job's `environment:` — where it deploys. Read when the file is parsed; expanded per build, when
 * its variables are known (`name: review/$CI_COMMIT_REF_SLUG`, a matrix `$CLUSTER`), into GitLab's
 * `CI_ENVIRONMENT_*` variables. This server keeps no environments or deployments of its own: the job
 * sees what GitLab would tell it, and `on_stop`, `auto_stop_in` and `kubernetes` are accepted for files
 * written for GitLab but change nothing here.
 */
import { createHash } from 'node:crypto';
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readEnum, readString } from './parse-values.js';
import { ENVIRONMENT_KEYWORDS } from './keywords.js';
import type { DeploymentTier, EnvironmentAction, JobEnvironmentSpec } from './spec.js';
import { expandVariables } from './variables-expand.js';

export const ENVIRONMENT_ACTIONS: readonly EnvironmentAction[] = ['start', 'prepare', 'stop', 'verify', 'access'];
export const DEPLOYMENT_TIERS: readonly DeploymentTier[] = ['production', 'staging', 'testing', 'development', 'other'];


/** `environment: production` or `environment: { name, url, action, deployment_tier, on_stop, auto_stop_in, kubernetes }`. */
export function readEnvironment(value: unknown, path: ConfigPath): JobEnvironmentSpec {
  if (!isMap(value)) return { name: readString(value, path), action: 'start' };
  checkKeys(value, ENVIRONMENT_KEYWORDS, path);
  const at = (key: string): ConfigPath => childPath(path, key);
  const given = (key: string): boolean => value[key] !== undefined && value[key] !== null;
  if (!given('name')) configError(at('name'), 'is missing: an environment needs a name');
  const spec: JobEnvironmentSpec = { name: readString(value.name, at('name')), action: given('action') ? readEnum(value.action, ENVIRONMENT_ACTIONS, at('action')) : 'start' };
  if (given('url')) spec.url = readString(value.url, at('url'));
  if (given('deployment_tier')) spec.tier = readEnum(value.deployment_tier, DEPLOYMENT_TIERS, at('deployment_tier'));
  if (given('on_stop')) readString(value.on_stop, at('on_stop'));
  if (given('auto_stop_in')) readString(value.auto_stop_in, at('auto_stop_in'));
  if (given('kubernetes') && !isMap(value.kubernetes)) configError(at('kubernetes'), 'must be a map');
  return spec;
}

/**
 * GitLab's environment slug: lower-case letters, digits and single dashes, starting with a letter, at
 * most 24 characters; a name that had to change gets a suffix from its hash, so two names never
 * share a slug.
 */
export function environmentSlug(name: string): string {
  let slug = name.toLowerCase().replace(/[^a-z0-9]/g, '-');
  if (!/^[a-z]/.test(slug)) slug = `env-${slug}`;
  slug = slug.replace(/-+/g, '-');
  if (slug.length <= 24 && slug === name) return slug.replace(/-$/, '');
  const short = slug.slice(0, 17);
  const suffix = BigInt(`0x${createHash('sha256').update(name).digest('hex')}`).toString(36).slice(-6);
  return `${short}${short.endsWith('-') ? '' : '-'}${suffix}`;
}

/** The tier GitLab guesses from an environment's name when `deployment_tier` is not given. */
export function guessTier(name: string): DeploymentTier {
  if (/(dev|review|trunk)/i.test(name)) return 'development';
  if (/(test|tst|int|ac(ce|)pt|qa|qc|control|quality)/i.test(name)) return 'testing';
  if (/(st(a|)g|mod(e|)l|pre|demo|non)/i.test(name)) return 'staging';
  if (/(pr(o|)d|live)/i.test(name)) return 'production';
  return 'other';
}

/** The `CI_ENVIRONMENT_*` variables of a build, its name and url expanded with `variables`. */
export function environmentVariables(spec: JobEnvironmentSpec, variables: Readonly<Record<string, string>>): Array<[string, string]> {
  const name = expandVariables(spec.name, variables);
  const list: Array<[string, string]> = [
    ['CI_ENVIRONMENT_NAME', name],
    ['CI_ENVIRONMENT_SLUG', environmentSlug(name)],
    ['CI_ENVIRONMENT_ACTION', spec.action],
    ['CI_ENVIRONMENT_TIER', spec.tier ?? guessTier(name)],
  ];
  if (spec.url !== undefined) list.push(['CI_ENVIRONMENT_URL', expandVariables(spec.url, variables)]);
  return list;
}
