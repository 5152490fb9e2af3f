/**
 * `register --template-config FILE` (TEMPLATE_CONFIG_FILE) as GitLab Runner 19 does it: FILE is a
 * config.toml with exactly one `[[runners]]` entry (its token dropped), merged *under* what the flags and
 * environment give. A value given there wins unless it is Go's zero value (false, 0, "", an empty list):
 * GitLab Runner merges with mergo, which fills only the zero fields, table by table. The Helm chart
 * registers so (its `runners.config` is the template), as do many scripts. The merged entry is checked
 * by the config loader against the template's lines before anything is registered.
 */
import { parse, TomlError } from 'smol-toml';
import { ConfigError } from '../../agent/config/errors.js';
import { isTable, isUnset } from '../../agent/config/key-check.js';
import { tomlLayout, type TomlLayout } from '../../agent/config/lines.js';
import { validateConfig } from '../../agent/config/load.js';
import { readConfigText } from '../../agent/config/read.js';
import type { NewRunnerEntry } from '../../agent/config/write.js';
import { CommandError, EXIT } from '../support.js';

export interface RunnerTemplate {
  path: string;
  /** The whole template (its global keys are checked, not written). */
  raw: Record<string, unknown>;
  /** Its one `[[runners]]` entry, without `token`. */
  entry: Record<string, unknown>;
  layout: TomlLayout;
}

/** Reads FILE; exit 2 when it cannot be read, is not TOML or has not exactly one `[[runners]]` entry. */
export async function readTemplate(path: string): Promise<RunnerTemplate> {
  const fail = (why: string): never => {
    throw new CommandError(EXIT.usage, `couldn't load configuration template file: ${why}`);
  };
  let text = '';
  try {
    text = await readConfigText(path);
  } catch (error) {
    fail(error instanceof ConfigError ? error.message : `${path}: ${(error as Error).message}`);
  }
  let raw: Record<string, unknown> = {};
  try {
    raw = parse(text) as Record<string, unknown>;
  } catch (error) {
    fail(error instanceof TomlError ? `${path}:${error.line}:${error.column}: not valid TOML: ${error.message.split('\n')[0] ?? ''}` : `${path}: ${(error as Error).message}`);
  }
  const runners = raw.runners;
  if (!Array.isArray(runners) || runners.length !== 1 || !isTable(runners[0])) {
    throw new CommandError(EXIT.usage, `${path}: configuration template must contain exactly one [[runners]] entry`);
  }
  const { token: _token, ...entry } = runners[0];
  return { path, raw, entry, layout: tomlLayout(text) };
}

/**
 * `over` with the template's values where `over` has none or Go's zero value; tables are merged key by
 * key, lists and other values taken whole (mergo's defaults). Neither argument is changed.
 */
export function mergeUnder(over: Record<string, unknown>, under: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...over };
  for (const [key, value] of Object.entries(under)) {
    const mine = merged[key];
    if (isTable(mine) && isTable(value)) merged[key] = mergeUnder(mine, value);
    else if (mine === undefined || (isUnset(mine) && !isTable(mine))) merged[key] = structuredClone(value);
  }
  return merged;
}

/**
 * Checks the merged entry as the loader will read it, with the template's global keys and lines (a value
 * from a flag has no line there; the flags were checked on their own before). Returns the loader's
 * warnings (GitLab Runner keys of the template that ci-runner does not use, each with its line); a value
 * or key the loader would refuse exits 2.
 */
export function checkMergedEntry(template: RunnerTemplate, entry: NewRunnerEntry): string[] {
  const raw = structuredClone({ ...template.raw, runners: [{ ...entry, token: 'template' }] });
  try {
    return validateConfig(raw, template.layout, template.path, { checkTlsFiles: false }).warnings;
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandError(EXIT.usage, `--template-config: ${error.message}`);
    throw error;
  }
}
