/**
 * Pipeline variables of `exec`: `--env-file FILE` (dotenv) first, then `--variable K=V`, later ones
 * winning. The dotenv reading follows the common convention: `KEY=value` per line, `#` comments and
 * blank lines skipped, an optional `export ` prefix, values in single quotes taken literally, in
 * double quotes with `\n`, `\t`, `\"` and `\\` escapes and spanning lines, unquoted ones trimmed and
 * cut at ` #`.
 */
import { readFile } from 'node:fs/promises';
import { CiRunnerError } from '../util/errors.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A malformed `--variable` or env file: exit 2 (usage), naming the file and line. */
export class VariableError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('EXEC_VARIABLE_INVALID', message);
  }
}

/** `K=V` → [K, V]; the value may contain `=` and be empty. */
export function parseVariableFlag(text: string): [string, string] {
  const eq = text.indexOf('=');
  const key = eq === -1 ? text : text.slice(0, eq);
  if (eq === -1 || !NAME.test(key)) throw new VariableError(`--variable ${text}: expected NAME=value, with a name like MY_VAR`);
  return [key, text.slice(eq + 1)];
}

/** Parses dotenv text; `source` names the file in errors. */
export function parseDotenv(text: string, source: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const lineNo = i + 1;
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const body = line.startsWith('export ') ? line.slice('export '.length).trimStart() : line;
    const eq = body.indexOf('=');
    const key = eq === -1 ? body : body.slice(0, eq).trimEnd();
    if (eq === -1 || !NAME.test(key)) throw new VariableError(`${source}:${lineNo}: expected NAME=value, got "${line}"`);
    let rest = body.slice(eq + 1).trimStart();
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      // A quoted value may continue on the following lines until its closing quote.
      let end = closingQuote(rest, quote);
      while (end === -1 && i + 1 < lines.length) {
        i += 1;
        rest += `\n${lines[i] ?? ''}`;
        end = closingQuote(rest, quote);
      }
      if (end === -1) throw new VariableError(`${source}:${lineNo}: ${key}'s value has no closing ${quote}`);
      const inner = rest.slice(1, end);
      out.set(key, quote === '"' ? unescapeDouble(inner) : inner);
      continue;
    }
    const comment = rest.search(/\s#/);
    out.set(key, (comment === -1 ? rest : rest.slice(0, comment)).trim());
  }
  return out;
}

function closingQuote(text: string, quote: string): number {
  for (let i = 1; i < text.length; i += 1) {
    if (quote === '"' && text[i] === '\\') {
      i += 1;
      continue;
    }
    if (text[i] === quote) return i;
  }
  return -1;
}

function unescapeDouble(text: string): string {
  return text.replace(/\\([nrt"\\$])/g, (_all, c: string) => ({ n: '\n', r: '\r', t: '\t' })[c as 'n'] ?? c);
}

/** The pipeline variables from `--env-file` files (in order) and `--variable` flags. */
export async function pipelineVariables(envFiles: readonly string[], flags: readonly string[]): Promise<Record<string, string>> {
  const variables: Record<string, string> = {};
  for (const file of envFiles) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new VariableError(`--env-file ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
    }
    for (const [key, value] of parseDotenv(text, file)) variables[key] = value;
  }
  for (const flag of flags) {
    const [key, value] = parseVariableFlag(flag);
    variables[key] = value;
  }
  return variables;
}
