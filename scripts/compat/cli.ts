/**
 * The command line as a compatibility surface: every command name (ours, and GitLab Runner's that
 * ci-runner does not have), and each command's flags as yargs registers them from the flag tables,
 * with the environment names `--help` shows and the Support of the EnvFlag tables that give one.
 */
import type { Argv, CommandModule } from 'yargs';
import { honoured, refused, type Support } from '../../src/util/compat.js';
import { COMMAND_ALIASES, COMMAND_NAMES, OWN_COMMANDS, loadCommands } from '../../src/cli/commands/index.js';
import { GITLAB_ONLY_COMMANDS } from '../../src/cli/unknown-command.js';
import { addGlobalOptions } from '../../src/cli/global-options.js';
import { registeredEnvFlags, type EnvFlag } from '../../src/cli/env-options.js';
import { GLOBAL_KEYS } from '../../src/agent/config/schema.js';
import type { KeyEntry, KeyTable } from '../../src/agent/config/keys.js';
import { CACHE_FLAGS } from '../../src/cli/cache-flags.js';
import { DOCKER_FLAGS } from '../../src/cli/docker-flags.js';
import { KUBERNETES_FLAGS } from '../../src/cli/kubernetes-flags.js';
import { CUSTOM_FLAGS } from '../../src/cli/custom-flags.js';
import type { Row } from './markdown.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command has its own argument type
type AnyCommand = CommandModule<any, any>;

export interface CommandFlags {
  readonly command: string;
  readonly describe: string;
  readonly rows: readonly Row[];
}

interface YargsInternals {
  getOptions(): { key: Record<string, boolean>; alias: Record<string, string[]> };
  getInternalMethods(): { getUsageInstance(): { getDescriptions(): Record<string, string | undefined> } };
}

/** Every command name: ours (GitLab Runner's where it has it) and GitLab Runner's we lack, refused. */
export function commandRows(describe: ReadonlyMap<string, string>): Row[] {
  const ours = COMMAND_NAMES.map((name): Row => ({
    name,
    support: honoured(),
    cells: [OWN_COMMANDS.includes(name) ? "ci-runner's own" : 'GitLab Runner', describe.get(name) ?? (COMMAND_ALIASES[name] ? `\`${COMMAND_ALIASES[name]}\` under GitLab Runner's name` : '')],
  }));
  const theirs = Object.entries(GITLAB_ONLY_COMMANDS).map(([name, reason]): Row => ({ name, support: refused(`exit 2: \`${name}\` ${reason}`), cells: ['GitLab Runner', ''] }));
  return [...ours, ...theirs];
}

/** Each command's flags, in `--help` order, hidden ones (GitLab Runner's that we only warn about or refuse) included. */
export async function commandFlags(): Promise<CommandFlags[]> {
  const { default: yargs } = await import('yargs');
  const global = yargs([]);
  addGlobalOptions(global);
  const out: CommandFlags[] = [{ command: '(every command)', describe: 'Global options, given before or after the command name', rows: optionRows(global, new Set()) }];
  const globalNames = new Set(registeredEnvFlags(global).map((f) => f.flag));
  for (const command of (await loadCommands(undefined)) as AnyCommand[]) {
    const y = yargs([]);
    if (typeof command.builder === 'function') command.builder(y);
    else y.options(command.builder ?? {});
    out.push({ command: String(command.command).split(' ')[0] ?? '', describe: String(command.describe ?? ''), rows: optionRows(y, globalNames) });
  }
  return out;
}

/** The options registered on `y`, but yargs' own and `skip`. */
function optionRows(y: Argv, skip: ReadonlySet<string>): Row[] {
  const internals = y as unknown as YargsInternals;
  const options = internals.getOptions();
  const aliases = new Set(Object.values(options.alias).flat());
  const flags = Object.keys(options.key).filter((key) => key !== 'help' && key !== 'version' && !aliases.has(key) && !skip.has(key));
  return flagRows(flags, registeredEnvFlags(y), options.alias, internals.getInternalMethods().getUsageInstance().getDescriptions());
}

/** The `[[runners]]` key at `path` (`['cache', 's3', 'RoleARN']`). */
function runnerKey(path: readonly string[]): KeyEntry | undefined {
  let table: KeyTable | undefined = GLOBAL_KEYS.keys.runners?.table;
  let entry: KeyEntry | undefined;
  for (const name of path) {
    entry = table?.keys[name];
    table = entry?.table;
  }
  return entry;
}

/**
 * The flags that write a config key (`--docker-*`, `--cache-*`, `--kubernetes-*`, `--custom-*`): each means what its
 * key means, so it has the key's Support (a warned key is warned about when the written file loads).
 */
const KEY_FLAGS: ReadonlyMap<string, Support> = new Map(
  [
    ...Object.entries(DOCKER_FLAGS).map(([key, f]) => [f.flag, ['docker', key]] as const),
    ...CACHE_FLAGS.map((f) => [f.flag, ['cache', ...(f.table ? [f.table] : []), f.key]] as const),
    ...KUBERNETES_FLAGS.map((f) => [f.flag, ['kubernetes', ...f.path]] as const),
    ...CUSTOM_FLAGS.map((f) => [f.flag, ['custom', f.key]] as const),
  ].flatMap(([flag, path]) => {
    const entry = runnerKey(path);
    if (!entry) throw new Error(`--${flag} writes [runners] ${path.join('.')}, which no key table has`);
    return [[flag, entry.support] as const];
  }),
);

/** One row a flag: `--flag` (and its short forms), the environment names `--help` gives, what it is for. */
function flagRows(flags: readonly string[], tables: readonly EnvFlag[], alias: Readonly<Record<string, readonly string[]>>, descriptions: Readonly<Record<string, string | undefined>>): Row[] {
  return flags.map((flag) => {
    const entry = tables.find((f) => f.flag === flag);
    const support: Support = entry?.support ?? KEY_FLAGS.get(flag) ?? honoured();
    const text = (descriptions[flag] ?? '').replace(/^__yargsString__:/, '');
    const env = /\[env: ([^\]]*)\]/.exec(text)?.[1] ?? '';
    const what = text
      .replace(/ ?\[env: [^\]]*\]/, '')
      .replace(/ ?\[default: [^\]]*\]/, '')
      .replace(/ \((accepted and ignored|refused): .*\)$/, '');
    const forms = (alias[flag] ?? []).map((a) => (a.length === 1 ? `-${a}` : `--${a}`));
    return { name: `--${flag}`, support, cells: [forms.join(', '), env, what] };
  });
}
