/**
 * A job's registry logins as the docker CLI reads them: a `config.json` in a directory of the job's
 * own, named by `DOCKER_CONFIG` in the environment of the CLI's pulls only. In GitLab Runner 19's
 * order, the first source naming a registry wins: DOCKER_AUTH_CONFIG (docker-auth-config.ts), the
 * runner's own docker config (its `auths`, credential helpers), then v4's `credentials[]` (`type:
 * registry`, e.g. `gitlab-ci-token` and the job token for the GitLab registry). A password is never on
 * a command line (no `docker login -p`) nor in a log. The directory lives in the job's private state
 * dir and goes with it.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { BuildCredential } from '../../protocol/types.js';
import { writeNewFile } from '../../util/new-file.js';

const DIR = 'docker-config';

/** The registry host a credential's `url` names (`https://registry.example.com/v2/` → `registry.example.com`). */
export function registryHost(url: string): string {
  const trimmed = url.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) && URL.canParse(trimmed)) return new URL(trimmed).host;
  // Not `/\/.*$/`: a coordinator's text, and that search costs the square of a run of slashes.
  const slash = trimmed.indexOf('/');
  return slash >= 0 ? trimmed.slice(0, slash) : trimmed;
}

/**
 * Writes the job's docker config when it has registry logins (`jobAuths`: DOCKER_AUTH_CONFIG's);
 * returns the environment its pulls need (`{ DOCKER_CONFIG }`), or none when there is nothing to log in with.
 */
export async function jobDockerConfig(stateDir: string, credentials: readonly BuildCredential[], env: NodeJS.ProcessEnv = process.env, jobAuths: Record<string, { auth: string }> = {}): Promise<Record<string, string>> {
  const logins = credentials.filter((c) => c.type === 'registry' && c.url !== '' && c.username !== '');
  if (logins.length === 0 && Object.keys(jobAuths).length === 0) return {};
  const config = await runnerDockerConfig(env);
  const auths = { ...(typeof config.auths === 'object' && config.auths !== null ? config.auths : {}) } as Record<string, unknown>;
  for (const login of logins) auths[registryHost(login.url)] ??= { auth: Buffer.from(`${login.username}:${login.password}`).toString('base64') };
  Object.assign(auths, jobAuths);
  // A credential helper of the runner's for a registry DOCKER_AUTH_CONFIG logs in to would win in the CLI.
  const helpers = typeof config.credHelpers === 'object' && config.credHelpers !== null ? { ...(config.credHelpers as Record<string, unknown>) } : undefined;
  for (const registry of Object.keys(jobAuths)) if (helpers) delete helpers[registry];
  if (helpers) config.credHelpers = helpers;
  const dir = join(stateDir, DIR);
  const { mkdir } = await import('node:fs/promises');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeNewFile(join(dir, 'config.json'), `${JSON.stringify({ ...config, auths })}\n`, 0o600);
  return { DOCKER_CONFIG: dir };
}

/** The runner's own docker config, or an empty one. */
async function runnerDockerConfig(env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const dir = env.DOCKER_CONFIG || join(homedir(), '.docker');
  try {
    const parsed = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
