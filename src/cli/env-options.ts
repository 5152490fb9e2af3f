/**
 * Flags that can also come from the environment, as GitLab Runner's do (`--url` or CI_SERVER_URL).
 * One table per command declares each flag once: `addEnvOptions` registers it with yargs and lists
 * its environment names in `--help`, `resolveEnvOptions` fills what the command line left out from
 * the environment, then the default. So a name shown in `--help` is a name that is read, and every
 * value, from either place, is checked the same way (a bad one names where it came from).
 *
 * yargs itself gets no defaults for these flags: a default would hide whether the flag was given,
 * and the environment must win over a default but lose to the command line.
 */
import type { Argv, Options } from 'yargs';
import type { Support } from '../util/compat.js';
import { CiRunnerError } from '../util/errors.js';

/**
 * `list`: repeatable flag; its environment value is one item, or several on separate lines (items
 * such as `NO_PROXY=a,b` hold commas). `csv`: repeatable flag, comma-separated in the environment.
 */
export type EnvKind = 'string' | 'int' | 'boolean' | 'list' | 'csv';

export interface EnvFlag {
  flag: string;
  /** Environment names, read in order; the first is the one to document (none: a flag only). */
  env: readonly string[];
  kind: EnvKind;
  describe: string;
  alias?: string | readonly string[];
  choices?: readonly string[];
  /** Applied when neither the command line nor the environment gives a value. */
  default?: string | number | boolean | readonly string[];
  /** Smallest whole number accepted (int only). */
  min?: number;
  group?: string;
  /** Left out of `--help` (an older spelling). */
  hidden?: boolean;
  /**
   * How a flag of GitLab Runner's is treated (util/compat.ts); absent: honoured. A `warned` flag is
   * accepted with one warning giving the reason, a `refused` one ends the command (exit 2) with it.
   */
  support?: Support;
}

/**
 * The warnings for `warned` flags given (on the command line or through their environment names);
 * throws for a `refused` one given.
 */
export function checkFlagSupport(argv: Record<string, unknown>, flags: readonly EnvFlag[], env: NodeJS.ProcessEnv = process.env): string[] {
  const warnings: string[] = [];
  for (const f of flags) {
    if (!f.support || f.support.status === 'honoured') continue;
    const fromArgv = argv[f.flag] !== undefined && !(Array.isArray(argv[f.flag]) && (argv[f.flag] as unknown[]).length === 0);
    const fromEnv = f.env.find((n) => env[n] !== undefined && env[n] !== '');
    if (!fromArgv && fromEnv === undefined) continue;
    const where = fromArgv ? `--${f.flag}` : fromEnv!;
    if (f.support.status === 'refused') throw new EnvOptionError(`${where}: ${f.support.reason}`);
    warnings.push(`${where} is ignored: ${f.support.reason}`);
  }
  return warnings;
}

/** A flag or environment value that cannot be used; the CLI exits 2. */
export class EnvOptionError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('OPTION_INVALID', message);
  }
}

/** The EnvFlag entries each yargs instance was given, for docs/compatibility.md (scripts/compat/). */
const registered = new WeakMap<object, EnvFlag[]>();

/** The table entries `addEnvOptions` registered on `y` (its flags' Support). */
export function registeredEnvFlags(y: object): readonly EnvFlag[] {
  return registered.get(y) ?? [];
}

/** Registers the table's flags, each with `[env: NAME]` (and its default) in its description. */
export function addEnvOptions<T>(y: Argv<T>, flags: readonly EnvFlag[]): Argv<T> {
  let out = y;
  registered.set(y, [...(registered.get(y) ?? []), ...flags]);
  for (const f of flags) {
    const defaultText = f.default === undefined || (Array.isArray(f.default) && f.default.length === 0) ? '' : ` [default: ${JSON.stringify(f.default)}]`;
    const options: Options = {
      type: f.kind === 'int' ? 'number' : f.kind === 'boolean' ? 'boolean' : 'string',
      describe: `${f.describe}${supportText(f.support)}${f.env.length > 0 ? ` [env: ${f.env.join(' or ')}]` : ''}${defaultText}`,
      ...(f.kind === 'list' || f.kind === 'csv' ? { array: true } : {}),
      ...(f.alias !== undefined ? { alias: f.alias as string | string[] } : {}),
      ...(f.choices ? { choices: [...f.choices] } : {}),
      ...(f.group ? { group: f.group } : {}),
      ...(f.hidden ? { hidden: true } : {}),
    };
    out = out.option(f.flag, options);
  }
  return out;
}

/**
 * The table's values: the command line's, else the first environment name that is set (and not
 * empty), else the default. Keys are the flag names; flags with no value are left out.
 */
export function resolveEnvOptions(argv: Record<string, unknown>, flags: readonly EnvFlag[], env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of flags) {
    const value = fromFlag(argv[f.flag], f) ?? fromEnv(env, f) ?? (f.default === undefined ? undefined : Array.isArray(f.default) ? [...f.default] : f.default);
    if (value !== undefined) out[f.flag] = value;
  }
  return out;
}

function fromFlag(value: unknown, f: EnvFlag): unknown {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return undefined;
  switch (f.kind) {
    case 'int':
      return checkInt(Array.isArray(value) ? value.at(-1) : value, `--${f.flag}`, f);
    case 'boolean':
      return Boolean(value);
    case 'list':
    case 'csv':
      return (Array.isArray(value) ? value : [value]).map(String);
    case 'string':
      // A flag given twice keeps the last value, as in GitLab Runner.
      return String(Array.isArray(value) ? value.at(-1) : value);
  }
}

function fromEnv(env: NodeJS.ProcessEnv, f: EnvFlag): unknown {
  const name = f.env.find((n) => env[n] !== undefined && env[n] !== '');
  if (name === undefined) return undefined;
  const text = env[name] ?? '';
  const where = `${name}="${text}"`;
  switch (f.kind) {
    case 'int':
      return checkInt(text.trim() === '' ? Number.NaN : Number(text), where, f);
    case 'boolean':
      return parseBool(text, where);
    case 'list':
      return text.split(/\r?\n/).map((s) => s.trim()).filter((s) => s !== '');
    case 'csv':
      return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
    case 'string':
      if (f.choices && !f.choices.includes(text)) throw new EnvOptionError(`${where}: expected ${f.choices.join(', ')} (as --${f.flag})`);
      return text;
  }
}

function checkInt(value: unknown, where: string, f: EnvFlag): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n)) throw new EnvOptionError(`${where}: expects a whole number`);
  if (f.min !== undefined && n < f.min) throw new EnvOptionError(`${where}: must be ${f.min} or more`);
  return n;
}

/** GitLab Runner's spellings (Go's ParseBool) and the usual yes/no, on/off. */
function parseBool(text: string, where: string): boolean {
  if (/^(1|t|true|yes|y|on)$/i.test(text.trim())) return true;
  if (/^(0|f|false|no|n|off)$/i.test(text.trim())) return false;
  throw new EnvOptionError(`${where}: expected true or false`);
}

function supportText(support: Support | undefined): string {
  if (!support || support.status === 'honoured') return '';
  return ` (${support.status === 'warned' ? 'accepted and ignored' : 'refused'}: ${support.reason})`;
}

/** Every environment name a table reads. */
export function envNames(flags: readonly EnvFlag[]): string[] {
  return flags.flatMap((f) => [...f.env]);
}

/** Config keys whose flag is not the key with dashes. */
const FLAG_OF_KEY: Readonly<Record<string, string>> = { environment: 'env' };

/**
 * How to name a config key's value in a message: its flag when the command line gave it, else the
 * environment name it came from (`RUNNER_ENV`), else the flag.
 */
export function flagLabel(flags: readonly EnvFlag[], key: string, argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): string {
  const flag = FLAG_OF_KEY[key] ?? key.replace(/_/g, '-');
  const f = flags.find((candidate) => candidate.flag === flag);
  if (!f || fromFlag(argv[flag], f) !== undefined) return `--${flag}`;
  return f.env.find((n) => env[n] !== undefined && env[n] !== '') ?? `--${flag}`;
}
