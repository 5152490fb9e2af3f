/**
 * `include:` — only files of the pipeline's own commit (`local`), relative to the project root, with
 * wildcards, nested includes and `rules` (`if`, `exists`, `changes`). Included files are deep-merged in order, then the including file
 * over them, as GitLab does; `inputs:` fill the included file's `spec: inputs:` (`inputs.ts`). `project`,
 * `remote`, `template` and `component` are refused: the reference server fetches nothing from outside
 * the repository.
 */
import { posix } from 'node:path';
import picomatch from 'picomatch';
import { ruleMatches, type RuleFacts } from './conditions.js';
import type { CommitFiles } from './context.js';
import { deepMerge } from './merge.js';
import { PipelineConfigError } from './parse-error.js';
import { checkKeys, isMap, type YamlMap } from './parse-values.js';
import { INCLUDE_KEYWORDS } from './keywords.js';
import { readInputValues } from './inputs.js';
import { readRules } from './rules.js';
import type { InputValues, RuleSpec } from './spec.js';
import { expandVariables } from './variables-expand.js';
import { loadYaml } from './yaml-load.js';

/** GitLab's default limit on included files per pipeline. */
const MAX_INCLUDES = 150;

const ELSEWHERE = ['project', 'remote', 'template', 'component'] as const;

export interface IncludeOptions {
  /** The commit's files; without them a pipeline with `include` is refused. */
  files: CommitFiles | undefined;
  /** Predefined and request variables, expanded in include paths as GitLab does. */
  variables: Readonly<Record<string, string>>;
  /** The pipeline, for `include: - local: … rules:`; without it such an entry is refused. */
  facts?: RuleFacts | undefined;
  /** Where included files' warnings (a key written twice) go. */
  warnings?: string[];
}

interface IncludeEntry {
  path: string;
  rules?: RuleSpec[];
  inputs?: InputValues;
}

/** The pipeline with every `include` resolved and merged; `root` is not changed. */
export async function resolveIncludes(root: YamlMap, options: IncludeOptions): Promise<YamlMap> {
  const state = { count: 0, seen: new Set<string>() };
  return merged(root, [], options, state);
}

async function merged(config: YamlMap, chain: readonly string[], options: IncludeOptions, state: { count: number; seen: Set<string> }): Promise<YamlMap> {
  const { include, ...own } = config;
  if (include === undefined || include === null) return own;
  const from = chain.at(-1) ?? 'the pipeline file';
  const files = options.files;
  if (files === undefined) {
    throw new PipelineConfigError(`include (in ${from}) needs the project's files: create the pipeline through the server or ci-runner exec`, { key: 'include' });
  }
  let result: YamlMap = {};
  for (const entry of readEntries(include, from)) {
    if (entry.rules && !(await included(entry.rules, options, from))) continue;
    for (const path of await matchingPaths(expandVariables(entry.path, options.variables), files, from)) {
      if (chain.includes(path)) {
        throw new PipelineConfigError(`include: ${[...chain, path].join(' → ')} is a cycle; a file cannot include itself`, { key: 'include' });
      }
      // Every include counts towards GitLab's limit, the same file named again too; it is merged once.
      if (++state.count > MAX_INCLUDES) {
        throw new PipelineConfigError(`include: more than ${MAX_INCLUDES} includes (nested ones and repeats of a file count too); GitLab allows at most ${MAX_INCLUDES}`, { key: 'include' });
      }
      // The same file with other inputs is another configuration (a template included twice).
      const seen = `${path}\0${JSON.stringify(entry.inputs ?? {})}`;
      if (state.seen.has(seen)) continue;
      state.seen.add(seen);
      const text = await files.read(path);
      if (text === undefined) throw new PipelineConfigError(`include: local file '${path}' (from ${from}) does not exist in the commit`, { key: 'include' });
      const loaded = loadYaml(text, path, options.warnings, { ...(entry.inputs ? { values: entry.inputs } : {}), variables: options.variables });
      const content = await merged(loaded, [...chain, path], options, state);
      result = deepMerge(result, content);
    }
  }
  return deepMerge(result, own);
}

/** GitLab's `include:rules`: the first matching rule decides; none matching leaves the file out. */
async function included(rules: readonly RuleSpec[], options: IncludeOptions, from: string): Promise<boolean> {
  if (options.facts === undefined) {
    throw new PipelineConfigError(`include:rules (in ${from}) needs the pipeline's ref and files: create the pipeline through the server`, { key: 'include:rules' });
  }
  const { predefined, variables } = options.facts.context;
  for (const rule of rules) {
    if (await ruleMatches(rule, options.facts, { ...predefined, ...variables })) return rule.when !== 'never';
  }
  return false;
}

/** The local paths (or wildcard patterns) an `include:` value names, with their rules. */
function readEntries(value: unknown, from: string): IncludeEntry[] {
  const entries = Array.isArray(value) ? value : [value];
  return entries.map((entry) => {
    if (typeof entry === 'string') {
      if (/^https?:\/\//i.test(entry)) refuseElsewhere('remote', from);
      return { path: entry };
    }
    if (!isMap(entry)) throw new PipelineConfigError(`include (in ${from}) must be a file path, a list of them, or maps with local:`, { key: 'include' });
    const elsewhere = ELSEWHERE.find((key) => entry[key] !== undefined);
    if (elsewhere !== undefined) refuseElsewhere(elsewhere, from);
    try {
      checkKeys(entry, INCLUDE_KEYWORDS, { key: 'include' });
    } catch (error) {
      throw new PipelineConfigError(`${(error as Error).message} (in ${from})`, { key: 'include' }, { cause: error });
    }
    if (typeof entry.local !== 'string' || entry.local === '') {
      throw new PipelineConfigError(`include:local (in ${from}) must be a file path`, { key: 'include:local' });
    }
    const read: IncludeEntry = { path: entry.local };
    if (entry.rules !== undefined && entry.rules !== null) read.rules = readRules(entry.rules, { key: 'include:rules' }, { of: 'include' });
    if (entry.inputs !== undefined && entry.inputs !== null) read.inputs = readInputValues(entry.inputs, { key: 'include:inputs' });
    return read;
  });
}

/** `include: project | remote | template | component`: refused offline, with the table's reason. */
function refuseElsewhere(kind: (typeof ELSEWHERE)[number], from: string): never {
  const support = INCLUDE_KEYWORDS[kind]?.support;
  const reason = support?.status === 'refused' ? support.reason : 'a local run reads only the files of this repository';
  throw new PipelineConfigError(`include:${kind} (in ${from}) is not supported: ${reason}`, { key: `include:${kind}` });
}

/** `path` relative to the root (a leading `/` is the root too), or every file a wildcard matches. */
async function matchingPaths(path: string, files: CommitFiles, from: string): Promise<string[]> {
  const relative = posix.normalize(path.replace(/^\/+/, ''));
  if (relative.startsWith('../') || relative === '..' || relative === '.') {
    throw new PipelineConfigError(`include: '${path}' (from ${from}) is outside the repository`, { key: 'include:local' });
  }
  if (!/\.ya?ml$/.test(relative)) {
    throw new PipelineConfigError(`include: '${path}' (from ${from}) must be a .yml or .yaml file`, { key: 'include:local' });
  }
  if (!picomatch.scan(relative).isGlob) return [relative];
  const isMatch = picomatch(relative, { dot: true });
  const found = (await files.paths()).filter((candidate) => isMatch(candidate)).sort();
  if (found.length === 0) throw new PipelineConfigError(`include: '${path}' (from ${from}) matches no file of the commit`, { key: 'include:local' });
  return found;
}
