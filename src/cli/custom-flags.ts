/**
 * The `--custom-*` flags of `register` and `run-once`, with GitLab Runner 19's flag and environment
 * names (the `long:` and `env:` tags of its CustomConfig, under the `custom` namespace). Each row names
 * the `[runners.custom]` key it sets, typed against `CustomOptions`, so a flag cannot name a key the
 * executor does not read. The `*-args` flags repeat, one argument each, and have no environment name
 * (GitLab Runner gives them none); timeouts are whole seconds. Values become a raw `[runners.custom]`
 * table: `register` writes it to config.toml, `run-once` parses it with the same schema as the file.
 */
import type { Argv } from 'yargs';
import type { CustomOptions } from '../executors/custom/options.js';
import { addEnvOptions, resolveEnvOptions, type EnvFlag } from './env-options.js';

interface CustomFlag extends EnvFlag {
  key: keyof CustomOptions;
}

const GROUP = 'Custom executor ([runners.custom]):';

const program = (key: keyof CustomOptions, env: string, what: string): CustomFlag => ({ key, flag: `custom-${key.replace(/_/g, '-')}`, env: [env], kind: 'string', describe: what, group: GROUP });
const args = (key: keyof CustomOptions, of: string): CustomFlag => ({ key, flag: `custom-${key.replace(/_/g, '-')}`, env: [], kind: 'list', describe: `An argument given to ${of}${of === 'run_exec' ? ', before the script and the stage name' : ''} (repeatable)`, group: GROUP });
const seconds = (key: keyof CustomOptions, env: string, what: string): CustomFlag => ({ key, flag: `custom-${key.replace(/_/g, '-')}`, env: [env], kind: 'int', describe: `${what}, in seconds (unset or 0: GitLab Runner's default)`, group: GROUP });

export const CUSTOM_FLAGS: readonly CustomFlag[] = [
  program('config_exec', 'CUSTOM_CONFIG_EXEC', 'Driver program that says, as JSON, where and how the job runs'),
  args('config_args', 'config_exec'),
  seconds('config_exec_timeout', 'CUSTOM_CONFIG_EXEC_TIMEOUT', 'Limit of config_exec (default 3600)'),
  program('prepare_exec', 'CUSTOM_PREPARE_EXEC', 'Driver program that prepares the job\'s environment'),
  args('prepare_args', 'prepare_exec'),
  seconds('prepare_exec_timeout', 'CUSTOM_PREPARE_EXEC_TIMEOUT', 'Limit of prepare_exec (default 3600)'),
  program('run_exec', 'CUSTOM_RUN_EXEC', 'Driver program that runs each stage\'s script (required for jobs to run)'),
  args('run_args', 'run_exec'),
  program('cleanup_exec', 'CUSTOM_CLEANUP_EXEC', 'Driver program that cleans up after the job, whatever happened'),
  args('cleanup_args', 'cleanup_exec'),
  seconds('cleanup_exec_timeout', 'CUSTOM_CLEANUP_EXEC_TIMEOUT', 'Limit of cleanup_exec (default 3600)'),
  seconds('graceful_kill_timeout', 'CUSTOM_GRACEFUL_KILL_TIMEOUT', 'Time a driver has after SIGTERM before SIGKILL (default 600)'),
  seconds('force_kill_timeout', 'CUSTOM_FORCE_KILL_TIMEOUT', 'Time waited after SIGKILL before giving the driver up (default 10)'),
];

/** Adds the `--custom-*` options to a command, in a "Custom executor" group. */
export function addCustomFlags<T>(y: Argv<T>): Argv<T> {
  return addEnvOptions(y, CUSTOM_FLAGS);
}

/**
 * The raw `[runners.custom]` table from flags, then environment variables; keys with no value are left
 * out (so the schema's defaults apply). Throws EnvOptionError (exit 2) for a timeout that is not a
 * whole number, naming where it came from.
 */
export function customTableFromFlags(argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const values = resolveEnvOptions(argv, CUSTOM_FLAGS, env);
  return Object.fromEntries(CUSTOM_FLAGS.filter((f) => values[f.flag] !== undefined).map((f) => [f.key, values[f.flag]]));
}

/**
 * `run_exec` → `--custom-run-exec`, for messages about the parsed table; with the arguments, the
 * environment name instead when the value came from there (`CUSTOM_RUN_EXEC`).
 */
export function customFlagOfKey(key: string, argv?: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): string {
  const f = CUSTOM_FLAGS.find((row) => row.key === key);
  if (!f) return `[runners.custom] ${key}`;
  const given = argv?.[f.flag];
  if (argv === undefined || (given !== undefined && !(Array.isArray(given) && given.length === 0))) return `--${f.flag}`;
  return f.env.find((name) => env[name] !== undefined && env[name] !== '') ?? `--${f.flag}`;
}
