/**
 * Reads config.toml once: TOML → unknown-key check → zod schema (schema.ts) → deep freeze. A bad value or an
 * unknown key stops the start with `file:line` and what is expected; a GitLab Runner key we do not
 * use is a warning. A reload (SIGHUP) calls this again and swaps the whole object.
 */
import { configFlagWarnings } from './feature-flags.js';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { readTlsMaterial, TlsFileError, type TlsFileKey } from '../../client/tls.js';
import { schemaMessages } from '../../util/schema-messages.js';
import { ConfigError } from './errors.js';
import { lineOf, tomlLayout, type TomlLayout } from './lines.js';
import { readConfigText } from './read.js';
import type { RunnerSection } from './section.js';
import {
  configSchema,
  IGNORED_GLOBAL_KEYS,
  IGNORED_RUNNER_KEYS,
  KNOWN_GLOBAL_KEYS,
  KNOWN_RUNNER_KEYS,
  REGISTRATION_RECORD_KEYS,
  RUNNER_SECTIONS,
  type Config,
} from './schema.js';

/** Words for zod's issues (schema-messages.ts); a TOML object is a table. */
const messages = schemaMessages({ object: 'table' });

/** The tables of an entry, as the key checks read them. */
const SECTIONS: readonly RunnerSection[] = RUNNER_SECTIONS;
/** The keys of the tables checked key by key (their unknown keys are reported before the schema runs). */
const CHECKED_TABLES = new Set<PropertyKey>(SECTIONS.filter((section) => section.keys).map((section) => section.key));

export interface LoadedConfig {
  path: string;
  config: Readonly<Config>;
  /** Human-readable notices (ignored GitLab Runner keys), each naming file and line. */
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
  const layout = tomlLayout(text);
  const warnings: string[] = [];
  const problems: string[] = [];
  const where = (p: ReadonlyArray<PropertyKey>): string => {
    const line = lineOf(layout, p);
    return line === undefined ? path : `${path}:${line}`;
  };
  sortKeys(raw, [], KNOWN_GLOBAL_KEYS, IGNORED_GLOBAL_KEYS, where, warnings, problems);
  const runners = raw.runners;
  if (Array.isArray(runners)) {
    runners.forEach((entry, i) => {
      if (!isTable(entry)) return;
      sortKeys(entry, ['runners', i], KNOWN_RUNNER_KEYS, IGNORED_RUNNER_KEYS, where, warnings, problems);
      for (const { key, keys } of SECTIONS) {
        const table = entry[key];
        if (keys && isTable(table)) sortKeys(table, ['runners', i, key], keys.known, keys.ignored, where, warnings, problems);
      }
    });
  }
  const result = configSchema.safeParse(raw, { error: messages });
  if (!result.success) {
    // Unknown keys of the top level, of each [[runners]] entry and of its tables checked key by key
    // were reported above, with their line.
    const reported = (issue: z.core.$ZodIssue): boolean =>
      issue.code === 'unrecognized_keys' &&
      (issue.path.length === 0 ||
        (issue.path.length === 2 && issue.path[0] === 'runners') ||
        (issue.path.length === 3 && issue.path[0] === 'runners' && CHECKED_TABLES.has(issue.path[2] ?? '')));
    problems.push(...result.error.issues.filter((issue) => !reported(issue)).map((issue) => describeIssue(issue, where)));
  }
  if (problems.length > 0 || !result.success) {
    throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  result.data.runners.forEach((runner, i) => {
    for (const line of configFlagWarnings(runner.feature_flags)) warnings.push(`${where(['runners', i, 'feature_flags'])}: [runners.feature_flags] ${line}`);
  });
  checkUniqueRunners(result.data, layout, path);
  defaultCaFiles(result.data, path);
  if (options.checkTlsFiles !== false) checkTlsFiles(result.data, where);
  return { path, config: deepFreeze(result.data), warnings };
}

const isTable = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);

function sortKeys(
  table: Record<string, unknown>,
  at: PropertyKey[],
  known: readonly string[],
  ignored: ReadonlySet<string>,
  where: (p: ReadonlyArray<PropertyKey>) => string,
  warnings: string[],
  problems: string[],
): void {
  for (const key of Object.keys(table)) {
    if (known.includes(key)) continue;
    const p = [...at, key];
    const within = at.length > 2 ? ` in [${at.filter((part) => typeof part === 'string').join('.')}]` : '';
    if (ignored.has(key)) {
      // GitLab Runner writes unset keys as false, 0 or an empty table: nothing was asked for.
      if (!isUnset(table[key]) && !REGISTRATION_RECORD_KEYS.has(key)) warnings.push(`${where(p)}: \`${key}\`${within} is a GitLab Runner setting that ci-runner does not use; it is ignored`);
      delete table[key];
      continue;
    }
    const guess = closest(key, known);
    problems.push(`${where(p)}: unknown key \`${key}\`${within}${guess ? ` (did you mean \`${guess}\`?)` : ''}; expected one of ${known.join(', ')}`);
  }
}

/** false, 0, "", an empty list or table, or Go's zero time (0001-01-01). */
function isUnset(value: unknown): boolean {
  if (value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (value instanceof Date) return value.getUTCFullYear() <= 1;
  if (value && typeof value === 'object') return Object.values(value).every(isUnset);
  return false;
}

function describeIssue(issue: z.core.$ZodIssue, where: (p: ReadonlyArray<PropertyKey>) => string): string {
  const name = issue.path.map(String).filter((p) => !/^\d+$/.test(p)).join('.') || '(file)';
  return `${where(issue.path)}: \`${name}\`: ${issue.message}`;
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

/** The known key within edit distance 2, if any. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const candidate of known) {
    const d = distance(key.toLowerCase().replace(/-/g, '_'), candidate.replace(/-/g, '_'));
    if (d <= 2 && (!best || d < best.d)) best = { key: candidate, d };
  }
  return best?.key;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    let prev = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const tmp = row[j] ?? 0;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length] ?? 0;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
