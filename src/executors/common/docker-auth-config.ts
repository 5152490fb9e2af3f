/**
 * DOCKER_AUTH_CONFIG (a job variable, or the runner's `environment`), as GitLab Runner 19 reads it
 * (`helpers/docker/auth`): a docker `config.json` document whose `auths` log the job's image and
 * service pulls in, before the runner's own docker config and the job's `credentials`. Its
 * `credsStore` and `credHelpers` name programs (`docker-credential-<name>`) that GitLab Runner runs on
 * its host; a job's variable must not run programs there, so they are left out with a warning. The
 * value is a secret: nothing here ever puts it in a message.
 */

export interface DockerAuths {
  /** Registry → `{ auth }` (base64 `user:password`), as `config.json` has them. */
  auths: Record<string, { auth: string }>;
  /** Why some of it was not used (never the value). */
  warnings: string[];
}

const SOURCE = '$DOCKER_AUTH_CONFIG';

/** The logins of a DOCKER_AUTH_CONFIG value; empty when unset. */
export function dockerAuthConfig(value: string | undefined): DockerAuths {
  const result: DockerAuths = { auths: {}, warnings: [] };
  if (value === undefined || value.trim() === '') return result;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    result.warnings.push(`Failed to resolve credentials from ${SOURCE}: it is not a JSON document. Credentials from this source will not be used.`);
    return result;
  }
  const config = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  if (config.credsStore !== undefined || config.credHelpers !== undefined) {
    result.warnings.push(`${SOURCE}: credsStore and credHelpers are not used (they would run a program on the runner's host); give the logins in "auths"`);
  }
  const auths = typeof config.auths === 'object' && config.auths !== null ? (config.auths as Record<string, unknown>) : {};
  for (const [registry, entry] of Object.entries(auths)) {
    const login = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
    const auth = typeof login.auth === 'string' && login.auth !== '' ? login.auth
      : typeof login.username === 'string' && typeof login.password === 'string' ? Buffer.from(`${login.username}:${login.password}`).toString('base64')
      : undefined;
    if (auth !== undefined && registry !== '' && !/[\u0000-\u001f]/.test(registry)) result.auths[registry] = { auth };
  }
  return result;
}
