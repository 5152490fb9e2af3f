/**
 * `id_tokens:` — a JSON Web Token per variable, signed RS256 with a key this server keeps, carrying
 * the claims GitLab puts in its CI/CD ID tokens (project, pipeline, job, ref, environment, runner, …)
 * so that scripts which read or pass them on work. They are not GitLab's: the issuer (`iss`) is this
 * server's URL, the key id says `ci-runner-local`, and the claim `ci_runner_local_token: true` says
 * it, so no service that trusts GitLab accepts them. The public key is served as a JWKS
 * (`/oauth/discovery/keys`, as GitLab serves its own) for a local service that wants to verify them.
 *
 * The key (RSA 2048) is made on first use and kept in the data dir, so tokens stay verifiable across
 * restarts of a durable server; a server without id_tokens jobs never makes one.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerContext } from '../context.js';
import type { JobIdToken } from '../../pipeline/spec.js';
import { expandAmongThemselves, expandReferences, type CollectedVariable } from '../../pipeline/variables-expand.js';
import type { BuildRecord, PipelineRecord, ProjectRecord } from './store.js';

const KEY_FILE = 'id-tokens-key.pem';
const keys = new WeakMap<ServerContext, { key: KeyObject; kid: string }>();

function signingKey(ctx: ServerContext): { key: KeyObject; kid: string } {
  const known = keys.get(ctx);
  if (known) return known;
  const path = join(ctx.dataDir, KEY_FILE);
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(path, 'utf8'));
  } catch {
    key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    mkdirSync(ctx.dataDir, { recursive: true });
    writeFileSync(path, key.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const made = { key, kid: `ci-runner-local-${createHash('sha256').update(der).digest('base64url').slice(0, 16)}` };
  keys.set(ctx, made);
  return made;
}

/** The public key as a JSON Web Key Set. */
export function idTokenJwks(ctx: ServerContext): { keys: Array<Record<string, string>> } {
  const { key, kid } = signingKey(ctx);
  const jwk = createPublicKey(key).export({ format: 'jwk' }) as Record<string, string>;
  return { keys: [{ ...jwk, kid, use: 'sig', alg: 'RS256' }] };
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** GitLab's claims of a CI/CD ID token for `build`, with `aud` (one, or a list, as written). */
export function idTokenClaims(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, aud: string | string[], now = Date.now()): Record<string, unknown> {
  const iat = Math.floor(now / 1000);
  const timeout = build.job.timeout ?? ctx.settings.defaultJobTimeout;
  const [namespace = ''] = project.name.split('/');
  const refType = pipeline.tag ? 'tag' : 'branch';
  const environment = build.job.environment;
  return {
    namespace_id: String(project.id),
    namespace_path: namespace,
    project_id: String(project.id),
    project_path: project.name,
    user_id: '1',
    user_login: 'ci-runner',
    user_email: 'ci-runner@localhost',
    user_access_level: 'owner',
    pipeline_id: String(pipeline.id),
    pipeline_source: pipeline.source ?? 'push',
    job_id: String(build.id),
    ref: pipeline.ref,
    ref_type: refType,
    ref_path: `refs/${pipeline.tag ? 'tags' : 'heads'}/${pipeline.ref}`,
    ref_protected: String(!pipeline.tag && pipeline.defaultBranch === pipeline.ref),
    ...(environment ? { environment: environment.name, environment_protected: 'false', environment_action: environment.action, ...(environment.tier ? { deployment_tier: environment.tier } : {}) } : {}),
    runner_id: build.runnerId ?? 0,
    runner_environment: 'self-hosted',
    sha: pipeline.sha,
    ci_config_ref_uri: `${new URL(ctx.baseUrl()).host}/${project.name}//.gitlab-ci.yml@refs/${pipeline.tag ? 'tags' : 'heads'}/${pipeline.ref}`,
    ci_config_sha: pipeline.sha,
    project_visibility: 'private',
    ci_runner_local_token: true,
    jti: randomUUID(),
    iss: ctx.baseUrl(),
    iat,
    nbf: iat - 5,
    exp: iat + timeout + 5 * 60,
    sub: `project_path:${project.name}:ref_type:${refType}:ref:${pipeline.ref}`,
    aud,
  };
}

/**
 * One signed JWT per `id_tokens:` entry of the build's job: `[variable, token]`. Variables in `aud` are
 * expanded with the job's other variables (`jobVariables`: predefined, its own, the pipeline's), those
 * first expanded among themselves, as GitLab expands them (`Ci::Build#expanded_id_token_aud`).
 */
export function idTokenVariables(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, jobVariables: readonly CollectedVariable[]): Array<[string, string]> {
  const tokens: readonly JobIdToken[] = build.job.idTokens ?? [];
  if (tokens.length === 0) return [];
  const { key, kid } = signingKey(ctx);
  const scope = expandAmongThemselves(jobVariables);
  return tokens.map((token) => {
    const aud = typeof token.aud === 'string' ? expandReferences(token.aud, scope) : token.aud.map((one) => expandReferences(one, scope));
    const unsigned = `${base64url({ alg: 'RS256', typ: 'JWT', kid })}.${base64url(idTokenClaims(ctx, build, pipeline, project, aud))}`;
    return [token.name, `${unsigned}.${sign('sha256', Buffer.from(unsigned), key).toString('base64url')}`];
  });
}
