/**
 * The daemon's command line without yargs. `ci-runner run` lives for months, and what it loads stays
 * loaded (ES modules are never unloaded): yargs and its help layout (cliui, string-width's Unicode
 * tables) keep ~5 MB resident for nothing once the flags are read. So `run` is parsed here, from the
 * same flag tables yargs is given, when the command line only uses the plain forms:
 *
 *   `--name value`, `--name=value`, `-n value`, `-n=value` (string flags), `--name` (boolean flags)
 *
 * Anything else — `--help`, `--version`, an unknown or repeated flag, a value outside its choices,
 * `--no-x`, a missing value, a stray word — returns undefined, and the caller hands the whole command
 * line to yargs, which parses, explains or refuses it as before. So this parser never decides a case
 * yargs would decide differently; test/cli/plain-flags.test.ts compares the two.
 */
import type { EnvFlag } from './env-options.js';

/** yargs' argv shape for what the handlers read: each flag under its name, aliases and camelCase. */
export type PlainArgv = Record<string, unknown> & { _: string[]; $0: string };

const camel = (name: string): string => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

function lookup(flags: readonly EnvFlag[], token: string): EnvFlag | undefined {
  if (token.startsWith('--')) return flags.find((f) => f.flag === token.slice(2));
  const short = token.slice(1);
  return flags.find((f) => (Array.isArray(f.alias) ? f.alias.includes(short) : f.alias === short));
}

/**
 * `args` (after the node and script words) as yargs would give them to `command`'s handler, or
 * undefined when they need yargs. `flags` is every flag the command takes, global ones included.
 */
export function parsePlainFlags(args: readonly string[], command: string, flags: readonly EnvFlag[]): PlainArgv | undefined {
  const values = new Map<EnvFlag, string | boolean>();
  let sawCommand = false;
  for (let i = 0; i < args.length; i += 1) {
    const token = args[i]!;
    if (!token.startsWith('-') || token === '-' || token === '--') {
      if (token !== command || sawCommand) return undefined;
      sawCommand = true;
      continue;
    }
    const eq = token.indexOf('=');
    const name = eq < 0 ? token : token.slice(0, eq);
    // `-ab` (a cluster of short flags) and `--x` spelt with one dash are yargs' to read.
    if (!name.startsWith('--') && name.length !== 2) return undefined;
    const flag = lookup(flags, name);
    if (!flag || values.has(flag)) return undefined;
    if (flag.kind === 'boolean') {
      if (eq >= 0) return undefined;
      values.set(flag, true);
      continue;
    }
    if (flag.kind !== 'string') return undefined;
    let value: string;
    if (eq >= 0) value = token.slice(eq + 1);
    else {
      const next = args[i + 1];
      if (next === undefined || next.startsWith('-')) return undefined;
      value = next;
      i += 1;
    }
    if (value === '') return undefined;
    if (flag.choices && !flag.choices.includes(value)) return undefined;
    values.set(flag, value);
  }
  if (!sawCommand) return undefined;
  const argv: PlainArgv = { _: [command], $0: 'ci-runner' };
  for (const [flag, value] of values) {
    const aliases = flag.alias === undefined ? [] : Array.isArray(flag.alias) ? flag.alias : [flag.alias as string];
    for (const key of new Set([flag.flag, camel(flag.flag), ...aliases])) argv[key] = value;
  }
  return argv;
}
