/**
 * What the container executors (docker, kubernetes) give a service alike, as GitLab Runner names and
 * fills it: the host names a service answers to, and the job's variables it may see.
 */
import type { ExportedVariable } from '../types.js';

/** `registry.example.com/group/redis:3` → `registry.example.com__group__redis`, `registry.example.com-group-redis`, then its own aliases. */
export function serviceAliases(spec: { name: string; alias?: string | undefined }): string[] {
  const digest = spec.name.indexOf('@');
  let name = digest >= 0 ? spec.name.slice(0, digest) : spec.name;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const aliases = [name.replace(/\//g, '__'), name.replace(/\//g, '-')];
  if (spec.alias) aliases.push(...spec.alias.split(/[\s,]+/).filter(Boolean));
  return [...new Set(aliases)];
}

/** The job's variables a service may see: nothing carrying the job token or the runner token. */
export function serviceEnvironment(variables: readonly ExportedVariable[], secrets: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  const hidden = secrets.filter((s) => s.length > 0);
  for (const { key, value } of variables) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) continue;
    if (key === 'CI_JOB_TOKEN' || key === 'CI_BUILD_TOKEN' || hidden.some((s) => value.includes(s))) continue;
    env[key] = value;
  }
  return env;
}
