/**
 * `[runners.custom]`, the custom executor's table (GitLab Runner 19's `common.CustomConfig`): the four
 * driver programs, their arguments and timeouts, read into the `CustomOptions` the custom executor
 * takes (src/executors/custom/options.ts). A timeout left out, zero or negative is GitLab Runner's
 * default (executors/custom/config.go): one hour for config, prepare and cleanup, 10 minutes of
 * grace after SIGTERM, 10 seconds after SIGKILL. CUSTOM_KEYS gives each key its status (keys.ts).
 */
import { z } from 'zod';
import type { CustomOptions } from '../../executors/custom/options.js';
import { CUSTOM_DEFAULTS } from '../../executors/custom/options.js';
import { honoured } from '../../util/compat.js';
import { key, keyTable } from './keys.js';

const program = z.string().default('');
const args = z.array(z.string()).default([]);
/** Seconds; unset, 0 or negative is the default (GitLab Runner's getDuration). */
const seconds = (defaultMs: number) =>
  z
    .int()
    .optional()
    .transform((v) => (v === undefined || v <= 0 ? defaultMs : v * 1000));

export const customSchema = z.strictObject({
  config_exec: program,
  config_args: args,
  config_exec_timeout: seconds(CUSTOM_DEFAULTS.configTimeoutMs),
  prepare_exec: program,
  prepare_args: args,
  prepare_exec_timeout: seconds(CUSTOM_DEFAULTS.prepareTimeoutMs),
  run_exec: program,
  run_args: args,
  cleanup_exec: program,
  cleanup_args: args,
  cleanup_exec_timeout: seconds(CUSTOM_DEFAULTS.cleanupTimeoutMs),
  graceful_kill_timeout: seconds(CUSTOM_DEFAULTS.gracefulKillMs),
  force_kill_timeout: seconds(CUSTOM_DEFAULTS.forceKillMs),
});

export type CustomSchemaConfig = z.output<typeof customSchema>;

/** The table's output is what the executor takes, key for key. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const CUSTOM_SCHEMA_IS_OPTIONS: Same<CustomSchemaConfig, CustomOptions> = true;

export const customSection = customSchema.prefault({});

export const CUSTOM_KEYS = keyTable(customSchema, {
  config_exec: key(honoured('its standard output is read as JSON (builds_dir, cache_dir, builds_dir_is_shared, hostname, driver, job_env, shell); its standard error goes to the job log')),
  config_args: key(honoured()),
  config_exec_timeout: key(honoured()),
  prepare_exec: key(honoured('tried up to 3 times, 3 s apart, as GitLab Runner prepares an executor')),
  prepare_args: key(honoured()),
  prepare_exec_timeout: key(honoured()),
  run_exec: key(honoured('called once per stage with the script path and GitLab Runner\'s stage name')),
  run_args: key(honoured()),
  cleanup_exec: key(honoured('its output goes to the runner\'s log (stdout at debug, stderr at warn), not the job\'s')),
  cleanup_args: key(honoured()),
  cleanup_exec_timeout: key(honoured()),
  graceful_kill_timeout: key(honoured()),
  force_kill_timeout: key(honoured()),
});
