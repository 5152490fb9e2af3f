/**
 * Edits config.toml as text so that the user's comments and layout survive: `register` appends a
 * `[[runners]]` block, `unregister`/`verify --delete` cut blocks out. Every write goes to a temp file
 * (mode 0600: the file holds runner tokens) that is then renamed over the original.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { isTable } from './key-check.js';
import { tomlLayout } from './lines.js';
import { readConfigText } from './read.js';

/** The keys `register` writes; undefined values are left out. */
export interface NewRunnerEntry {
  name: string;
  url: string;
  /** The runner's id on the server (a record, as GitLab Runner writes it; not read back). */
  id?: number;
  token: string;
  /** When the token was obtained and when it expires (records, as GitLab Runner writes them). */
  token_obtained_at?: Date;
  token_expires_at?: Date;
  /** `v4` or `v1` when given at registration; absent: the daemon asks the server. */
  api?: string;
  executor: string;
  shell?: string;
  builds_dir?: string;
  cache_dir?: string;
  limit?: number;
  output_limit?: number;
  request_concurrency?: number;
  pre_get_sources_script?: string;
  pre_build_script?: string;
  post_build_script?: string;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
  environment?: string[];
  /** Written as the entry's `[runners.docker]` table (raw values, validated by the caller). */
  docker?: Record<string, unknown>;
  /** Written as the entry's `[runners.cache]` table, its `s3`, `gcs`, `azure` as sub-tables (raw values, validated by the caller). */
  cache?: Record<string, unknown>;
  /** Written as the entry's `[runners.kubernetes]` table, with its sub-tables (raw values, validated by the caller). */
  kubernetes?: Record<string, unknown>;
  /** Written as the entry's `[runners.custom]` table (raw values, validated by the caller). */
  custom?: Record<string, unknown>;
  /** Written as the entry's `[runners.custom_build_dir]` table. */
  custom_build_dir?: { enabled: boolean };
  /** Any other key of an entry (`register --template-config` brings them), a table as `[runners.KEY]`. */
  [key: string]: unknown;
}

const NEW_FILE_HEADER = `# ci-runner configuration; see config.example.toml for every key.
concurrent = 1
check_interval = 0
`;

/** The tables register writes itself, in this order; any other (from a template) after them. */
const TABLE_ORDER = ['custom_build_dir', 'docker', 'cache', 'kubernetes', 'custom'];

/** Appends a `[[runners]]` entry, creating the file (and its directory) when missing. */
export async function appendRunner(path: string, entry: NewRunnerEntry): Promise<void> {
  const text = await readOrEmpty(path);
  const keys = defined(entry);
  const order = (name: string): number => {
    const at = TABLE_ORDER.indexOf(name);
    return at < 0 ? TABLE_ORDER.length : at;
  };
  const tables = Object.entries(keys)
    .filter(([, value]) => isTable(value) || (Array.isArray(value) && value.some(isTable)))
    .sort(([a], [b]) => order(a) - order(b));
  const plain = Object.fromEntries(Object.entries(keys).filter(([name]) => !tables.some(([table]) => table === name)));
  let block = `[[runners]]\n${indent(stringify(plain), '  ')}\n`;
  for (const [name, table] of tables) {
    if (isTable(table) && Object.keys(defined(table)).length === 0) continue;
    // smol-toml writes `[docker]`, `[docker.tmpfs]`, `[[docker.services]]`: they belong under this entry.
    const [head = '', ...body] = stringify({ [name]: isTable(table) ? defined(table) : table })
      .replace(/^\[\[(.+)\]\]$/gm, '[[runners.$1]]')
      .replace(/^\[([^[\]].*)\]$/gm, '[runners.$1]')
      .split('\n');
    block += `  ${head}\n${indent(body.join('\n'), '    ')}\n`;
  }
  const base = text === '' ? NEW_FILE_HEADER : text.endsWith('\n') ? text : `${text}\n`;
  await writeAtomic(path, `${base}\n${block}`);
}

function defined(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && v !== ''));
}

function indent(toml: string, by: string): string {
  return toml
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `${by}${line}`)
    .join('\n');
}

/**
 * Removes the `[[runners]]` entries for which `drop` returns true (with their sub-tables).
 * Returns the removed entries' names.
 */
export async function removeRunners(path: string, drop: (runner: { name: string; url: string; token: string }) => boolean): Promise<string[]> {
  const text = await readConfigText(path);
  const raw = parse(text) as { runners?: Array<Record<string, unknown>> };
  const layout = tomlLayout(text);
  const lines = text.split('\n');
  const removed: string[] = [];
  const cut = new Set<number>();
  (raw.runners ?? []).forEach((runner, i) => {
    const entry = { name: String(runner.name ?? ''), url: String(runner.url ?? ''), token: String(runner.token ?? '') };
    const block = layout.runnerBlocks[i];
    if (!block || !drop(entry)) return;
    removed.push(entry.name);
    for (let line = block.start; line < block.end; line += 1) cut.add(line);
  });
  if (removed.length === 0) return removed;
  const kept = lines.filter((_, index) => !cut.has(index + 1)).join('\n').replace(/\n{3,}/g, '\n\n');
  await writeAtomic(path, kept);
  return removed;
}

/**
 * Sets keys of the `[[runners]]` entry whose token is `token` (`reset-token` gives a new token): an
 * existing `key = …` line of the entry is replaced in place, a new key goes after its `token` line;
 * everything else of the file stays as it was. Returns false when no entry has that token.
 */
export async function updateRunner(path: string, token: string, values: Record<string, string | Date>): Promise<boolean> {
  const text = await readConfigText(path);
  const raw = parse(text) as { runners?: Array<Record<string, unknown>> };
  const index = (raw.runners ?? []).findIndex((runner) => runner.token === token);
  if (index < 0) return false;
  const layout = tomlLayout(text);
  const tokenLine = layout.lines.get(`runners.${index}.token`);
  if (tokenLine === undefined) return false;
  const lines = text.split('\n');
  const indentOf = (line: string | undefined): string => /^\s*/.exec(line ?? '')?.[0] ?? '';
  const added: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const assignment = stringify({ [key]: value }).trim();
    const at = layout.lines.get(`runners.${index}.${key}`);
    if (at !== undefined) lines[at - 1] = `${indentOf(lines[at - 1])}${assignment}`;
    else added.push(`${indentOf(lines[tokenLine - 1])}${assignment}`);
  }
  lines.splice(tokenLine, 0, ...added);
  await writeAtomic(path, lines.join('\n'));
  return true;
}

/** The config file's text, or '' when there is none yet; refuses a path that is not a regular file. */
export async function readOrEmpty(path: string): Promise<string> {
  try {
    return await readConfigText(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/** Writes via a temp file + rename so a reader never sees half a config. */
export async function writeAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}
