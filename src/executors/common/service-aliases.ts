/** The host names a service answers to, as GitLab Runner names them (docker, kubernetes alike). */

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
