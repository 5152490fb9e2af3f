/**
 * The environment of every driver call, in GitLab Runner 19's order (executors/custom/custom.go and
 * command.go; later entries win): the runner's own environment; TMPDIR (the job's temporary dir),
 * BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE, BUILD_EXIT_CODE_FILE and JOB_RESPONSE_FILE; the
 * `job_env` config_exec returned, unprefixed; then every job variable as `CUSTOM_ENV_<NAME>` (never
 * unprefixed, so a job cannot set the driver's PATH or LD_PRELOAD) and `CUSTOM_ENV_CI_JOB_SERVICES`.
 */
import { readFile } from 'node:fs/promises';
import type { BuildPayload, ServiceOptions } from '../../protocol/types.js';
import { serviceOwnVariables } from '../common/service-variables.js';
import type { ExportedVariable } from '../types.js';
import { BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE } from './options.js';

export interface DriverFiles {
  tmpDir: string;
  responseFile: string;
  exitCodeFile: string;
}

/** Names and values a process environment can carry (no `=` in a name, no NUL anywhere). */
function carriable(name: string, value: string): boolean {
  return name !== '' && !name.includes('=') && !name.includes('\0') && !value.includes('\0');
}

/**
 * The environment of one call. `variables` are the job's as the stage sees them; a file variable is
 * given by its content, as GitLab Runner gives it (its value there is the content).
 */
export async function driverEnv(files: DriverFiles, jobEnv: Readonly<Record<string, string>>, variables: readonly ExportedVariable[], build: BuildPayload): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  Object.assign(env, {
    TMPDIR: files.tmpDir,
    BUILD_FAILURE_EXIT_CODE: String(BUILD_FAILURE_EXIT_CODE),
    SYSTEM_FAILURE_EXIT_CODE: String(SYSTEM_FAILURE_EXIT_CODE),
    BUILD_EXIT_CODE_FILE: files.exitCodeFile,
    JOB_RESPONSE_FILE: files.responseFile,
  });
  for (const [name, value] of Object.entries(jobEnv)) if (carriable(name, value)) env[name] = value;
  for (const variable of variables) {
    const value = variable.file === undefined ? variable.value : await readFile(variable.file, 'utf8').catch(() => '');
    if (carriable(variable.key, value)) env[`CUSTOM_ENV_${variable.key}`] = value;
  }
  env.CUSTOM_ENV_CI_JOB_SERVICES = jobServices(build, variables);
  return env;
}

/**
 * CI_JOB_SERVICES as GitLab Runner writes it: a JSON array of name, alias (the first of the service's
 * aliases), entrypoint, command and, for a service with variables of its own, `variables` (each expanded
 * against the job's variables and the service's); empty without services.
 */
export function jobServices(build: BuildPayload, variables: readonly ExportedVariable[] = []): string {
  const specs: ServiceOptions[] = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
  if (specs.length === 0) return '';
  return JSON.stringify(
    specs.map((s) => ({
      name: s.name,
      alias: (s.alias ?? '').split(/[\s,]+/).find((a) => a !== '') ?? '',
      entrypoint: s.entrypoint ?? null,
      command: s.command ?? null,
      ...(s.variables && s.variables.length > 0 ? { variables: Object.fromEntries(serviceOwnVariables(s.variables, variables).map((v) => [v.key, v.value])) } : {}),
    })),
  );
}
