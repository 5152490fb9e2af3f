/**
 * What a service container's environment is made of, as GitLab Runner 19 makes it (its
 * GetServiceVariables, on docker and kubernetes alike): the job's public and internal variables (GitLab's
 * `public`, and those the runner sets), then the service's own `variables:`. A project's or a pipeline's
 * variables (`public: false`: its secrets) never reach a service, which is often a third-party image; a
 * service's own variable may still name one (`DB_PASSWORD: $SECRET`), an explicit opt-in by whoever
 * wrote it. Neither the job token nor the runner's ever reaches one.
 */
import { expandString } from '../../util/expand.js';
import type { ExportedVariable } from '../types.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A service's environment: of `variables`, the public ones (service-own ones are, serviceOwnVariables),
 * under a name a process environment can hold, without the job token or any value holding one of `secrets`.
 */
export function serviceEnvironment(variables: readonly ExportedVariable[], secrets: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  const hidden = secrets.filter((s) => s.length > 0);
  for (const { key, value, public: visible } of variables) {
    if (!visible || !NAME.test(key)) continue;
    if (key === 'CI_JOB_TOKEN' || key === 'CI_BUILD_TOKEN' || hidden.some((s) => value.includes(s))) continue;
    env[key] = value;
  }
  return env;
}

/** A service's own `variables:`, expanded against all the job's (secrets too: GitLab Runner's GetServiceVariables). */
export function serviceOwnVariables(variables: ReadonlyArray<{ key: string; value: string }> | undefined, job: readonly ExportedVariable[]): ExportedVariable[] {
  if (!variables) return [];
  const all = [...job, ...variables];
  return variables.map(({ key, value }) => ({ key, public: true, value: expandString(value, (name) => all.findLast((v) => v.key === name)?.value ?? '') }));
}
