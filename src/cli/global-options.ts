/**
 * Options every command takes, before or after its name (`ci-runner --debug run` as with
 * `gitlab-runner --debug run`): `--debug` and `--log-level`, with GitLab Runner's environment
 * names. Given either way they win over `log_level` in config.toml, as there. GitLab Runner's
 * `--cpuprofile` is accepted with a warning.
 */
import type { Argv } from 'yargs';
import { LOG_FORMATS } from '../log/format-choice.js';
import { warned } from '../util/compat.js';
import { addEnvOptions, checkFlagSupport, resolveEnvOptions, type EnvFlag } from './env-options.js';

/** pino's levels plus GitLab Runner's (logrus) `warning` (read as warn) and `panic` (read as fatal). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'warning', 'error', 'fatal', 'panic', 'silent'] as const;
export type LogLevel = Exclude<(typeof LOG_LEVELS)[number], 'panic' | 'warning'>;

const GLOBAL_FLAGS: readonly EnvFlag[] = [
  { flag: 'debug', env: ['RUNNER_DEBUG'], kind: 'boolean', describe: 'Log at debug level (as --log-level debug)', group: 'Global options:' },
  { flag: 'log-level', alias: 'l', env: ['LOG_LEVEL'], kind: 'string', choices: LOG_LEVELS, describe: 'Log level; wins over log_level in config.toml', group: 'Global options:' },
];

/**
 * `--log-format`, global too; its environment value is read (and a bad one refused) before any
 * logger is made, by the CLI's entry (main.ts), not with the table above.
 */
const LOG_FORMAT_FLAG: EnvFlag = {
  flag: 'log-format',
  env: ['LOG_FORMAT'],
  kind: 'string',
  choices: LOG_FORMATS,
  describe: 'Log lines as runner (one human line per event), text (with time and level) or json (one object per line); wins over log_format in config.toml',
  group: 'Global options:',
};

/** GitLab Runner's other global flag, accepted so its command lines work, with one warning saying why it does nothing. */
const CPU_PROFILE_FLAG: EnvFlag = {
  flag: 'cpuprofile',
  env: ['CPU_PROFILE'],
  kind: 'string',
  describe: "GitLab Runner's Go CPU profile (not written here)",
  hidden: true,
  support: warned('ci-runner writes no Go (pprof) CPU profile; for a V8 one, start it with NODE_OPTIONS=--cpu-prof'),
};

/** Adds the global options to the top-level program; a warned one given draws its warning once, before the command runs. */
export function addGlobalOptions<T>(y: Argv<T>): Argv<T> {
  return addEnvOptions(y, [...GLOBAL_FLAGS, LOG_FORMAT_FLAG, CPU_PROFILE_FLAG]).middleware((argv) => {
    for (const line of checkFlagSupport(argv, [CPU_PROFILE_FLAG])) process.stderr.write(`WARNING: ${line}\n`);
  });
}

/** The level asked for on the command line or in the environment (`--debug` wins), else undefined. */
export function requestedLogLevel(argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): LogLevel | undefined {
  const values = resolveEnvOptions(argv, GLOBAL_FLAGS, env);
  if (values.debug === true) return 'debug';
  const level = values['log-level'] as (typeof LOG_LEVELS)[number] | undefined;
  return level === 'panic' ? 'fatal' : level === 'warning' ? 'warn' : level;
}
