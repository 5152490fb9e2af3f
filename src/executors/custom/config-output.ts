/**
 * What config_exec prints on standard output (GitLab Runner's `api.ConfigExecOutput`): a JSON object
 * whose keys each override one setting for this job; keys it does not know are ignored, a known key
 * of the wrong type fails the call, as Go's json.Unmarshal does. Nothing at all printed changes
 * nothing (GitLab Runner reads no JSON then); anything else that is not JSON fails the call.
 */
import { z } from 'zod';
import { DriverError } from './driver.js';

const configOutputSchema = z.looseObject({
  driver: z.looseObject({ name: z.string().nullish(), version: z.string().nullish() }).nullish(),
  hostname: z.string().nullish(),
  builds_dir: z.string().nullish(),
  cache_dir: z.string().nullish(),
  builds_dir_is_shared: z.boolean().nullish(),
  job_env: z.record(z.string(), z.string()).nullish(),
  shell: z.string().nullish(),
});

export interface DriverConfig {
  driver?: { name?: string; version?: string };
  hostname?: string;
  buildsDir?: string;
  cacheDir?: string;
  buildsDirIsShared?: boolean;
  jobEnv: Record<string, string>;
  shell?: string;
}

/** Most bytes of config_exec output read (its JSON is a few hundred bytes). */
export const CONFIG_OUTPUT_LIMIT = 1024 * 1024;

/** Reads config_exec's standard output. Throws DriverError DRIVER_BAD_CONFIG saying what is wrong. */
export function parseConfigOutput(stdout: string): DriverConfig {
  if (stdout.length === 0) return { jobEnv: {} };
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch (error) {
    throw new DriverError('DRIVER_BAD_CONFIG', `error while parsing JSON output of config_exec: ${(error as Error).message} (it printed ${JSON.stringify(stdout.slice(0, 80))}${stdout.length > 80 ? '…' : ''})`);
  }
  if (json === null) return { jobEnv: {} };
  const parsed = configOutputSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'the output';
    throw new DriverError('DRIVER_BAD_CONFIG', `error while parsing JSON output of config_exec: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  const out = parsed.data;
  const driver = out.driver ? { ...(out.driver.name != null ? { name: out.driver.name } : {}), ...(out.driver.version != null ? { version: out.driver.version } : {}) } : undefined;
  return {
    ...(driver ? { driver } : {}),
    ...(out.hostname != null ? { hostname: out.hostname } : {}),
    ...(out.builds_dir != null ? { buildsDir: out.builds_dir } : {}),
    ...(out.cache_dir != null ? { cacheDir: out.cache_dir } : {}),
    ...(out.builds_dir_is_shared != null ? { buildsDirIsShared: out.builds_dir_is_shared } : {}),
    jobEnv: out.job_env ?? {},
    ...(out.shell != null ? { shell: out.shell } : {}),
  };
}

/** GitLab Runner's line: `Using Custom executor with driver NAME VERSION...`, the driver's parts as far as told. */
export function usingLine(driver: DriverConfig['driver']): string {
  if (driver?.name === undefined) return 'Using Custom executor...';
  if (driver.version === undefined) return `Using Custom executor with driver ${driver.name}...`;
  return `Using Custom executor with driver ${driver.name} ${driver.version}...`;
}
