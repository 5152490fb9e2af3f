/**
 * Readers for the value shapes `.gitlab-ci.yml` uses (scripts, string lists, variables, image, cache,
 * artifacts). Each takes the raw YAML value and where it sits, and either returns the normalised value
 * or throws a `PipelineConfigError` naming that place.
 */
import { childPath, configError, gitlabPath, PipelineConfigError, type ConfigPath } from './parse-error.js';
import { ARTIFACTS_KEYWORDS, CACHE_KEY_KEYWORDS, CACHE_KEYWORDS, IMAGE_KEYWORDS, REPORT_KEYWORDS, SERVICE_KEYWORDS, type KeywordTable } from './keywords.js';
import { parseDurationSeconds } from '../util/duration.js';
import type { JobArtifactsSpec, JobCacheSpec, JobServiceSpec, PullPolicy, SpecVariable } from './spec.js';

export type YamlMap = Record<string, unknown>;

export function isMap(value: unknown): value is YamlMap {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A map, or an error saying the key must be one. */
export function readMap(value: unknown, path: ConfigPath): YamlMap {
  if (!isMap(value)) configError(path, 'must be a map of keys to values');
  return value;
}

/**
 * Refuses keys outside `allowed` as GitLab does ("config contains unknown keys: …", naming all of them),
 * and keys the table refuses, with its reason. A table's `warned` keys pass: `keyword-notes.ts` lists them.
 */
export function checkKeys(map: YamlMap, allowed: readonly string[] | KeywordTable, path: ConfigPath): void {
  const table = Array.isArray(allowed) ? undefined : (allowed as KeywordTable);
  const known: readonly string[] = table === undefined ? (allowed as readonly string[]) : Object.keys(table);
  const unknown = Object.keys(map).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new PipelineConfigError(`${gitlabPath(path)} config contains unknown keys: ${unknown.join(', ')}`, { ...path, key: path.key === 'config' ? (unknown[0] ?? path.key) : path.key });
  }
  for (const key of Object.keys(map)) {
    const support = table?.[key]?.support;
    if (support?.status === 'refused') configError(path.key === 'config' ? { ...path, key } : childPath(path, key), `is not supported here: ${support.reason}`);
  }
}

export function readString(value: unknown, path: ConfigPath): string {
  if (typeof value !== 'string' || value === '') configError(path, 'must be a non-empty string');
  return value;
}

export function readBoolean(value: unknown, path: ConfigPath): boolean {
  if (typeof value !== 'boolean') configError(path, 'must be true or false');
  return value;
}

export function readStringList(value: unknown, path: ConfigPath): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item !== '')) {
    configError(path, 'must be a list of strings');
  }
  return value as string[];
}

export function readEnum<T extends string>(value: unknown, allowed: readonly T[], path: ConfigPath): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    configError(path, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * A script: one command string, or a list of commands. GitLab also accepts nested lists (handy with
 * anchors, `- *setup_steps`, and `!reference`), flattened here up to its 10 levels.
 */
export function readScript(value: unknown, path: ConfigPath, options: { allowEmpty: boolean }): string[] {
  const items = typeof value === 'string' ? [value] : Array.isArray(value) ? value.flat(9) : undefined;
  if (items === undefined || !items.every((item) => typeof item === 'string')) {
    // The usual cause: an unquoted line holding ": " (`- echo "Coverage: 87%"`), which YAML reads as a map.
    const map = items?.findIndex((item) => isMap(item));
    if (map !== undefined && map >= 0) {
      configError(path, `must be a string or a list of strings; entry ${map + 1} is a map, as YAML reads an unquoted line with ": " in it: quote the whole line ('…')`);
    }
    configError(path, 'must be a string or a list of strings');
  }
  const commands = items as string[];
  if (!options.allowEmpty && commands.every((command) => command.trim() === '')) {
    configError(path, 'must contain at least one command');
  }
  return commands;
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `variables:` — a map of names to strings or numbers (numbers become their decimal text, as GitLab
 * does); a name left without a value is empty. The map form `{ value, expand, description, options }`
 * is read too: `expand: false` keeps `$` in the value literal (`raw`), `options` lists the values
 * allowed (the value must be one of them), `description` is for people running pipelines by hand.
 */
export function readVariables(value: unknown, path: ConfigPath): SpecVariable[] {
  const map = readMap(value ?? {}, path);
  return Object.entries(map).map(([key, raw]) => {
    const at = childPath(path, key);
    if (!VARIABLE_NAME.test(key)) configError(at, 'is not a valid variable name (letters, digits and _, not starting with a digit)');
    if (!isMap(raw)) return { key, value: variableText(raw, at) };
    checkKeys(raw, ['value', 'expand', 'description', 'options'], at);
    const text = variableText(raw.value, childPath(at, 'value'));
    const variable: SpecVariable = { key, value: text };
    if (raw.expand !== undefined && raw.expand !== null && !readBoolean(raw.expand, childPath(at, 'expand'))) variable.raw = true;
    if (raw.description !== undefined && raw.description !== null && typeof raw.description !== 'string') configError(childPath(at, 'description'), 'must be a string');
    if (raw.options !== undefined && raw.options !== null) {
      const options = readStringList(raw.options, childPath(at, 'options'));
      if (!options.includes(text)) configError(childPath(at, 'value'), `'${text}' is not one of its options (${options.join(', ')})`);
    }
    return variable;
  });
}

/** A variable's value as text: null (a name with nothing after it) is empty; numbers and booleans their text. */
function variableText(value: unknown, path: ConfigPath): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  // GitLab's schema takes booleans too (`DEBUG: true`), as their text.
  if (typeof value === 'boolean') return String(value);
  return configError(path, 'must be a string, a number or a boolean');
}

/** `image: ruby:3` or `image: { name: ruby:3 }`. */
export function readImage(value: unknown, path: ConfigPath): string {
  if (isMap(value)) {
    checkKeys(value, IMAGE_KEYWORDS, path);
    if (value.pull_policy !== undefined && value.pull_policy !== null) readPullPolicy(value.pull_policy, childPath(path, 'pull_policy'));
    return readString(value.name, childPath(path, 'name'));
  }
  if (typeof value !== 'string' || value === '') configError(path, 'must be an image name or a map with name');
  return value;
}

/** `image: { name, entrypoint: [...] }`'s entrypoint (`[""]`: none); undefined when not given. */
export function readImageEntrypoint(value: unknown, path: ConfigPath): string[] | undefined {
  if (!isMap(value) || value.entrypoint === undefined || value.entrypoint === null) return undefined;
  return readArgv(value.entrypoint, childPath(path, 'entrypoint'));
}

const PULL_POLICIES = ['always', 'if-not-present', 'never'] as const;

/** `pull_policy: always` or a list of them. */
export function readPullPolicy(value: unknown, path: ConfigPath): PullPolicy[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((item, index) => readEnum(item, PULL_POLICIES, Array.isArray(value) ? childPath(path, String(index)) : path));
}

/** An entrypoint or command: a list of strings, empty ones included (`[""]` clears an entrypoint). */
function readArgv(value: unknown, path: ConfigPath): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) configError(path, 'must be a list of strings');
  return value as string[];
}

/** `image: { pull_policy }`, when given. */
export function readImagePullPolicy(value: unknown, path: ConfigPath): PullPolicy[] | undefined {
  if (!isMap(value) || value.pull_policy === undefined || value.pull_policy === null) return undefined;
  return readPullPolicy(value.pull_policy, childPath(path, 'pull_policy'));
}

/** `services: [postgres:15, { name: redis:7, alias: cache }]` → image names. */
export function readServices(value: unknown, path: ConfigPath): string[] {
  return readServiceSpecs(value, path).map((service) => service.name);
}

/** `services:` entry by entry: a name, or a map with `alias`, `entrypoint`, `command`, `pull_policy`. */
export function readServiceSpecs(value: unknown, path: ConfigPath): JobServiceSpec[] {
  if (!Array.isArray(value)) configError(path, 'must be a list of image names');
  return value.map((item, index): JobServiceSpec => {
    const at = childPath(path, String(index));
    if (!isMap(item)) return { name: readString(item, at) };
    checkKeys(item, SERVICE_KEYWORDS, at);
    const given = (key: string): boolean => item[key] !== undefined && item[key] !== null;
    const spec: JobServiceSpec = { name: readString(item.name, childPath(at, 'name')) };
    if (given('alias')) spec.alias = readString(item.alias, childPath(at, 'alias'));
    if (given('entrypoint')) spec.entrypoint = readArgv(item.entrypoint, childPath(at, 'entrypoint'));
    if (given('command')) spec.command = readArgv(item.command, childPath(at, 'command'));
    if (given('pull_policy')) spec.pullPolicy = readPullPolicy(item.pull_policy, childPath(at, 'pull_policy'));
    // `variables`, `docker` and `kubernetes`: parse-image-options.ts (withServiceExtras).
    return spec;
  });
}

/** GitLab's limit of caches per job. */
const MAX_CACHES = 4;
const CACHE_POLICIES = ['pull', 'push', 'pull-push'] as const;

/**
 * `cache:` — one map or a list of up to four (lists nested by `!reference` are flattened). See
 * `readCacheEntry` for each.
 */
export function readCache(value: unknown, path: ConfigPath): JobCacheSpec[] {
  if (!Array.isArray(value)) return [readCacheEntry(value, path)];
  const list = value.flat(9) as unknown[];
  if (list.length > MAX_CACHES) configError(path, `lists ${list.length} caches; at most ${MAX_CACHES} are allowed`);
  return list.map((entry, index) => readCacheEntry(entry, childPath(path, String(index))));
}

/**
 * One cache: `{ key, paths, untracked, policy, when, fallback_keys, unprotect }`; a number key becomes
 * its text; `key: { files, prefix }` is kept as `keyFiles` (the key itself is computed from those
 * files when the pipeline is created). `policy` may be a variable (`$POLICY`), expanded per build.
 * `unprotect` concerns protected branches, which this server does not have: accepted, changes nothing.
 */
function readCacheEntry(value: unknown, path: ConfigPath): JobCacheSpec {
  const map = readMap(value ?? {}, path);
  checkKeys(map, CACHE_KEYWORDS, path);
  const cache: JobCacheSpec = {};
  if (isMap(map.key)) {
    cache.keyFiles = readCacheKeyFiles(map.key, childPath(path, 'key'));
  } else if (map.key !== undefined && map.key !== null) {
    cache.key = typeof map.key === 'number' ? String(map.key) : readString(map.key, childPath(path, 'key'));
  }
  if (map.paths !== undefined && map.paths !== null) cache.paths = readStringList(map.paths, childPath(path, 'paths'));
  if (map.untracked !== undefined && map.untracked !== null) cache.untracked = readBoolean(map.untracked, childPath(path, 'untracked'));
  if (map.policy !== undefined && map.policy !== null) {
    const at = childPath(path, 'policy');
    cache.policy = typeof map.policy === 'string' && map.policy.includes('$') ? map.policy : readEnum(map.policy, CACHE_POLICIES, at);
  }
  if (map.when !== undefined && map.when !== null) cache.when = readEnum(map.when, ARTIFACTS_WHEN, childPath(path, 'when'));
  if (map.fallback_keys !== undefined && map.fallback_keys !== null) {
    const at = childPath(path, 'fallback_keys');
    cache.fallbackKeys = readStringList(map.fallback_keys, at);
    if (cache.fallbackKeys.length > 5) configError(at, 'lists more than 5 keys');
  }
  if (map.unprotect !== undefined && map.unprotect !== null) readBoolean(map.unprotect, childPath(path, 'unprotect'));
  return cache;
}

/**
 * `key: { files: [Gemfile.lock], prefix: $CI_JOB_NAME }`: one or two files, as GitLab allows; or
 * `files_commits:` (the key follows the last commit that changed them rather than their content).
 */
function readCacheKeyFiles(map: YamlMap, path: ConfigPath): NonNullable<JobCacheSpec['keyFiles']> {
  checkKeys(map, CACHE_KEY_KEYWORDS, path);
  const commits = map.files_commits !== undefined && map.files_commits !== null;
  if (commits && map.files !== undefined && map.files !== null) configError(path, 'may have files or files_commits, not both');
  const key = commits ? 'files_commits' : 'files';
  const files = readStringList(map[key], childPath(path, key));
  if (files.length < 1 || files.length > 2) configError(childPath(path, key), 'must list one or two files');
  for (const file of files) {
    if (file.startsWith('/') || file.split('/').includes('..')) configError(childPath(path, key), `names '${file}', which is not a path inside the project`);
  }
  const spec: NonNullable<JobCacheSpec['keyFiles']> = commits ? { files, commits: true } : { files };
  if (map.prefix !== undefined && map.prefix !== null) spec.prefix = readString(map.prefix, childPath(path, 'prefix'));
  return spec;
}

const ARTIFACTS_WHEN = ['on_success', 'on_failure', 'always'] as const;

/** `artifacts: { paths, name, untracked, when, expire_in }`; `expire_in` must be a duration or `never`. */
export function readArtifacts(value: unknown, path: ConfigPath): JobArtifactsSpec {
  const map = readMap(value ?? {}, path);
  checkKeys(map, ARTIFACTS_KEYWORDS, path);
  const artifacts: JobArtifactsSpec = {};
  if (map.exclude !== undefined && map.exclude !== null) artifacts.exclude = readStringList(map.exclude, childPath(path, 'exclude'));
  if (map.reports !== undefined && map.reports !== null) artifacts.reports = readReports(map.reports, childPath(path, 'reports'));
  if (map.name !== undefined && map.name !== null) artifacts.name = readString(map.name, childPath(path, 'name'));
  if (map.paths !== undefined && map.paths !== null) artifacts.paths = readStringList(map.paths, childPath(path, 'paths'));
  if (map.untracked !== undefined && map.untracked !== null) {
    artifacts.untracked = readBoolean(map.untracked, childPath(path, 'untracked'));
  }
  if (map.when !== undefined && map.when !== null) artifacts.when = readEnum(map.when, ARTIFACTS_WHEN, childPath(path, 'when'));
  if (map.expire_in !== undefined && map.expire_in !== null) {
    const at = childPath(path, 'expire_in');
    const text = typeof map.expire_in === 'number' ? String(map.expire_in) : readString(map.expire_in, at);
    if (text !== 'never' && !((parseDurationSeconds(text) ?? 0) > 0)) {
      configError(at, `'${text}' is not a duration (e.g. 30 minutes, 1 week, never)`);
    }
    artifacts.expire_in = text;
  }
  return artifacts;
}

/**
 * `artifacts:reports`: every report type GitLab knows (`keywords.ts`). `dotenv` becomes variables of
 * later jobs; the others are uploaded, kept and listed by GitLab's artifact type (`coverage_report`
 * by its `coverage_format`: `cobertura` or `jacoco`), and JUnit reports are read into test counts.
 */
function readReports(value: unknown, path: ConfigPath): NonNullable<JobArtifactsSpec['reports']> {
  const map = readMap(value, path);
  checkKeys(map, REPORT_KEYWORDS, path);
  const reports: NonNullable<JobArtifactsSpec['reports']> = {};
  for (const [type, raw] of Object.entries(map)) {
    if (raw === undefined || raw === null) continue;
    const at = childPath(path, type);
    if (type === 'coverage_report') {
      const coverage = readMap(raw, at);
      checkKeys(coverage, REPORT_KEYWORDS.coverage_report?.keys ?? {}, at);
      const format = readEnum(coverage.coverage_format, ['cobertura', 'jacoco'] as const, childPath(at, 'coverage_format'));
      reports.typed = { ...reports.typed, [format]: [readString(coverage.path, childPath(at, 'path'))] };
      continue;
    }
    const files = typeof raw === 'string' ? [readString(raw, at)] : readStringList(raw, at);
    if (type === 'dotenv') reports.dotenv = files;
    else reports.typed = { ...reports.typed, [type]: files };
  }
  return reports;
}

/** `timeout: 3600` (seconds) or `timeout: 1h 30m` → whole seconds. */
export function readTimeout(value: unknown, path: ConfigPath): number {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value <= 0 || value > 2_147_483_647) configError(path, 'must be a positive whole number of seconds');
    return value;
  }
  const parsed = typeof value === 'string' ? parseDurationSeconds(value) : undefined;
  const seconds = parsed === undefined ? undefined : Math.round(parsed);
  if (seconds === undefined || seconds < 1 || seconds > 2_147_483_647) {
    configError(path, 'must be a number of seconds or a duration such as 1h 30m or 10 minutes');
  }
  return seconds;
}
