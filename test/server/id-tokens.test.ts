/**
 * `id_tokens:` on the reference server: each variable a JWT signed RS256 with the server's own key,
 * verifiable against `/oauth/discovery/keys`, with GitLab's claims and the local markers, and its
 * `aud` expanded as GitLab expands it (`Ci::Build#expanded_id_token_aud`): with the job's variables,
 * those first expanded among themselves; `$X`, `${X}` and `%X%`; an unknown one empty; one audience or
 * a list, as written. Over API v4 (as GitLab Runner takes jobs) and v1.
 */
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';
import { raw } from './raw-http.js';
import { registerV4, takeJob } from './v4-http.js';

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer();
});
afterEach(async () => {
  await t.close();
});

interface Decoded {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  verified: boolean;
}

/** Decodes `token` and checks its signature with the key the server publishes under its `kid`. */
async function decode(token: string): Promise<Decoded> {
  const [head = '', body = '', signature = ''] = token.split('.');
  const header = JSON.parse(Buffer.from(head, 'base64url').toString()) as Record<string, unknown>;
  const jwks = JSON.parse((await raw(t.url, 'GET', '/oauth/discovery/keys')).text) as { keys: Array<JsonWebKey & { kid: string }> };
  const jwk = jwks.keys.find((key) => key.kid === header.kid);
  if (!jwk) throw new Error(`no key ${String(header.kid)} in the JWKS`);
  const verified = verify('sha256', Buffer.from(`${head}.${body}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(signature, 'base64url'));
  return { header, claims: JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>, verified };
}

const YAML = `variables:
  VAULT_HOST: vault.example.com
  VAULT_URL: https://$VAULT_HOST
  LITERAL:
    value: $VAULT_HOST
    expand: false
deploy:
  environment: production
  variables:
    SERVICE: api
  id_tokens:
    VAULT_ID_TOKEN:
      aud: $VAULT_URL
    LIST_ID_TOKEN:
      aud: ["\${CI_PROJECT_PATH}", "%CI_COMMIT_REF_NAME%-$SERVICE", "$NOT_SET", plain]
    ONE_ID_TOKEN:
      aud: [$LITERAL]
  script: [x]
`;

describe('id_tokens', () => {
  it('gives each variable a JWT that verifies against the JWKS, with GitLab\'s claims and aud expanded as GitLab expands it', async () => {
    const { token } = await registerV4(t);
    const p = await t.pipeline(YAML);
    const job = await takeJob(t, token);
    const variable = (key: string) => job.variables.find((v) => v.key === key);
    expect(variable('VAULT_ID_TOKEN')).toMatchObject({ public: false, masked: true });
    const vault = await decode(variable('VAULT_ID_TOKEN')!.value);
    expect(vault.verified).toBe(true);
    expect(vault.header).toMatchObject({ alg: 'RS256', typ: 'JWT', kid: expect.stringMatching(/^ci-runner-local-/) });
    expect(vault.claims).toMatchObject({
      aud: 'https://vault.example.com',
      iss: t.url,
      sub: 'project_path:group/project:ref_type:branch:ref:main',
      project_path: 'group/project',
      namespace_path: 'group',
      ref: 'main',
      ref_type: 'branch',
      ref_path: 'refs/heads/main',
      pipeline_id: String(p.id),
      job_id: String(job.id),
      environment: 'production',
      ci_runner_local_token: true,
    });
    expect(Number(vault.claims.exp)).toBeGreaterThan(Number(vault.claims.iat));
    expect((await decode(variable('LIST_ID_TOKEN')!.value)).claims.aud).toEqual(['group/project', 'main-api', '', 'plain']);
    // A raw variable is not expanded among the others, and a list of one stays a list.
    expect((await decode(variable('ONE_ID_TOKEN')!.value)).claims.aud).toEqual(['$VAULT_HOST']);
  });

  it('signs with the same key for API v1 runners, the token taken literally', async () => {
    const runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
    await t.pipeline(YAML);
    const build = await runner.poll();
    const vault = build?.variables.find((v) => v.key === 'VAULT_ID_TOKEN');
    expect(vault?.public).toBe(false);
    const decoded = await decode(vault!.value);
    expect(decoded).toMatchObject({ verified: true, claims: { aud: 'https://vault.example.com' } });
  });

  it('refuses a token whose signature was altered', async () => {
    const { token } = await registerV4(t);
    await t.pipeline(YAML);
    const job = await takeJob(t, token);
    const value = job.variables.find((v) => v.key === 'VAULT_ID_TOKEN')!.value;
    const [head, body] = value.split('.');
    const forged = Buffer.from(JSON.stringify({ ...(await decode(value)).claims, aud: 'https://elsewhere.example.com' })).toString('base64url');
    expect((await decode(`${head}.${forged}.${value.split('.')[2]}`)).verified).toBe(false);
    expect(body).not.toBe(forged);
  });
});
