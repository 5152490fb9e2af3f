/**
 * Reads config.toml once: TOML → key check against the key tables (key-check.ts) → zod schema (schema.ts)
 * → deep freeze. A bad value, an unknown key or a refused one stops the start with `file:line` and why; a
 * GitLab Runner key we do not use is a warning. A reload (SIGHUP) calls this again and swaps the whole object.
 */
import { configFlagWarnings } from './feature-flags.js';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { readTlsMaterial, TlsFileError, type TlsFileKey } from '../../client/tls.js';
import { schemaMessages } from '../../util/schema-messages.js';
import { ConfigError } from './errors.js';
import { checkKeys, isTable, isUnset, type KeyFindings } from './key-check.js';
import { lineOf, tomlLayout, type TomlLayout } from './lines.js';
import { readConfigText } from './read.js';
import { configSchema, GLOBAL_KEYS, runnerValueChecks, type Config } from './schema.js';

/** Words for zod's issues (schema-messages.ts); a TOML object is a table. */
const messages = schemaMessages({ object: 'table' });

export interface LoadedConfig {
  path: string;
  config: Readonly<Config>;
  /** Human-readable notices (ignored GitLab Runner keys and why), each naming file and line. */
  warnings: string[];
}

export interface LoadOptions {
  /** A missing file reads as one without runners. */
  allowMissing?: boolean;
  /**
   * Read every entry's TLS files now (default). Off for commands that touch only some entries
   * (`list`, `verify`, `unregister`): one entry's missing CA must not stop work on another; they check
   * the entries they use.
   */
  checkTlsFiles?: boolean;
}

/** Reads and validates `path`. A missing file is an error unless `allowMissing` (then: no runners). */
export async function loadConfig(path: string, options: LoadOptions = {}): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readConfigText(path);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && options.allowMissing) text = '';
    else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ConfigError(`${path}: no such config file; create one with \`ci-runner register\` or pass --config`, { cause: error });
    } else throw new ConfigError(`${path}: cannot read the config file: ${(error as Error).message}`, { cause: error });
  }
  return parseConfig(text, path, options);
}

/** Validates config text; `path` only labels messages. */
export function parseConfig(text: string, path: string, options: Pick<LoadOptions, 'checkTlsFiles'> = {}): LoadedConfig {
  let raw: Record<string, unknown>;
  try {
    raw = parse(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      throw new ConfigError(`${path}:${error.line}:${error.column}: not valid TOML: ${error.message.split('\n')[0] ?? ''}`, { cause: error });
    }
    throw new ConfigError(`${path}: not valid TOML: ${(error as Error).message}`, { cause: error });
  }
  return validateConfig(raw, tomlLayout(text), path, options);
}

/**
 * Validates a parsed config (`raw`, changed in place: dropped keys go) whose lines are in `layout`; `path`
 * labels messages. `register --template-config` checks its template's entry, merged with the flags, so.
 */
export function validateConfig(raw: Record<string, unknown>, layout: TomlLayout, path: string, options: Pick<LoadOptions, 'checkTlsFiles'> = {}): LoadedConfig {
  const where = (p: ReadonlyArray<PropertyKey>): string => {
    const line = lineOf(layout, p);
    return line === undefined ? path : `${path}:${line}`;
  };
  const found: KeyFindings = { warnings: [], problems: [], checked: new Set() };
  checkKeys(raw, GLOBAL_KEYS, [], where, found);
  const { warnings, problems } = found;
  const result = configSchema.safeParse(raw, { error: messages });
  if (!result.success) {
    // The unknown keys of every table the key check read were reported above, with their line.
    const reported = (issue: z.core.$ZodIssue): boolean => issue.code === 'unrecognized_keys' && found.checked.has(issue.path.join('.'));
    problems.push(...result.error.issues.filter((issue) => !reported(issue)).map((issue) => describeIssue(issue, where)));
  }
  result.data?.runners.forEach((runner, i) => {
    const checks = runnerValueChecks(runner);
    warnings.push(...checks.warnings.map((line) => `${where(['runners', i])}: ${line}`));
    problems.push(...checks.problems.map((line) => `${where(['runners', i])}: ${line}`));
  });
  if (problems.length > 0 || !result.success) {
    throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  result.data.runners.forEach((runner, i) => {
    for (const line of configFlagWarnings(runner.feature_flags)) warnings.push(`${where(['runners', i, 'feature_flags'])}: [runners.feature_flags] ${line}`);
  });
  checkUniqueRunners(result.data, layout, path);
  unusedExecutorTables(raw, result.data, where, warnings);
  defaultCaFiles(result.data, path);
  if (options.checkTlsFiles !== false) checkTlsFiles(result.data, where);
  return { path, config: deepFreeze(result.data), warnings };
}

function describeIssue(issue: z.core.$ZodIssue, where: (p: ReadonlyArray<PropertyKey>) => string): string {
  const name = issue.path.map(String).filter((p) => !/^\d+$/.test(p)).join('.') || '(file)';
  return `${where(issue.path)}: \`${name}\`: ${issue.message}`;
}

/** The tables only one executor reads: one set beside another executor does nothing (in GitLab Runner too). */
const EXECUTOR_TABLES = ['docker', 'kubernetes', 'custom'] as const;

function unusedExecutorTables(raw: Record<string, unknown>, config: Config, where: (p: ReadonlyArray<PropertyKey>) => string, warnings: string[]): void {
  const entries = Array.isArray(raw.runners) ? raw.runners : [];
  config.runners.forEach((runner, i) => {
    const entry: unknown = entries[i];
    if (!isTable(entry)) return;
    for (const table of EXECUTOR_TABLES) {
      if (table === runner.executor || entry[table] === undefined || isUnset(entry[table])) continue;
      warnings.push(`${where(['runners', i, table])}: [runners.${table}] is ignored: this runner's executor is "${runner.executor}"`);
    }
  });
}

/**
 * GitLab Runner's default CA location (docs/protocol-v1.md §2.2): an entry without `tls-ca-file` trusts
 * `<config dir>/certs/<coordinator host name>.crt` when that file exists.
 */
function defaultCaFiles(config: Config, path: string): void {
  for (const runner of config.runners) {
    if (runner['tls-ca-file'] || !URL.canParse(runner.url)) continue;
    const candidate = join(dirname(resolve(path)), 'certs', `${new URL(runner.url).hostname.replace(/^\[|\]$/g, '')}.crt`);
    if (existsSync(candidate)) runner['tls-ca-file'] = candidate;
  }
}

/**
 * Reads every entry's TLS files now, so a missing or malformed one stops the start (or is refused by a
 * reload) with its key and line, instead of failing each poll later.
 */
function checkTlsFiles(config: Config, where: (p: ReadonlyArray<PropertyKey>) => string): void {
  config.runners.forEach((runner, i) => {
    const label = (key: TlsFileKey): string => `${where(['runners', i, key])}: \`${key}\` of runner "${runner.name}":`;
    try {
      readTlsMaterial(runner, { 'tls-ca-file': label('tls-ca-file'), 'tls-cert-file': label('tls-cert-file'), 'tls-key-file': label('tls-key-file') });
    } catch (error) {
      if (error instanceof TlsFileError) throw new ConfigError(error.message, { cause: error });
      throw error;
    }
  });
}

function checkUniqueRunners(config: Config, layout: TomlLayout, path: string): void {
  const seen = new Map<string, number>();
  config.runners.forEach((runner, i) => {
    const key = `${runner.url} ${runner.token}`;
    const first = seen.get(key);
    if (first !== undefined) {
      const line = layout.runnerBlocks[i]?.start;
      throw new ConfigError(`${path}${line ? `:${line}` : ''}: runner "${runner.name}" repeats the url and token of runner #${first + 1}; remove one of them`);
    }
    seen.set(key, i);
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
