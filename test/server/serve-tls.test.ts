/** `ci-runner serve --tls-cert --tls-key [--tls-client-ca]` as a real process: https, optionally mutual. */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { readTlsMaterial } from '../../src/client/tls.js';
import { createGitRepo } from '../helpers/git.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { readyBlock } from './serve-process.js';

const MAIN = join(import.meta.dirname, '../../src/cli/main.ts');
let pki: Pki;
let repo: string;

function serve(args: string[]): ResultPromise<{ reject: false; all: true }> {
  return execa('node', ['--import', 'tsx', MAIN, 'serve', '--port', '0', ...args], { reject: false, all: true, env: { NO_COLOR: '1' } });
}

/** `git ls-remote` of `url` with git's own TLS settings; returns its exit code and stderr. */
async function lsRemote(url: string, config: string[]) {
  const result = await execa('git', [...config.flatMap((c) => ['-c', c]), 'ls-remote', url], {
    reject: false,
    stdin: 'ignore',
    // Only git's own settings: no GIT_SSL_CAINFO from the host, which would override them.
    extendEnv: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: pki.dir, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' },
  });
  return { exitCode: result.exitCode, stderr: result.stderr };
}

beforeAll(async () => {
  pki = await createPki();
  repo = await createGitRepo({ 'README.md': 'served over https\n' });
});
afterAll(async () => {
  await rm(pki.dir, { recursive: true, force: true });
  await rm(repo, { recursive: true, force: true });
});

describe('ci-runner serve over https', () => {
  it('shows https URLs and asks every client, git included, for a certificate from --tls-client-ca', async () => {
    const child = serve(['--tls-cert', pki.serverCert, '--tls-key', pki.serverKey, '--tls-client-ca', pki.caCert, '--registration-token', 'REGTOKEN1234567890ab', '--project', `acme/app=${repo}`]);
    try {
      const block = await readyBlock(child);
      const url = /URL:\s+(https:\/\/127\.0\.0\.1:\d+)/.exec(block)?.[1];
      expect(url, block).toBeDefined();
      expect(block).toContain(`acme/app  ${url}/acme/app.git`);
      expect(block).toContain('TLS:                https, client certificates required');

      const withCert = new RunnerApiClient({ url: url!, tls: readTlsMaterial({ 'tls-ca-file': pki.caCert, 'tls-cert-file': pki.clientCert, 'tls-key-file': pki.clientKey }) });
      const withoutCert = new RunnerApiClient({ url: url!, tls: readTlsMaterial({ 'tls-ca-file': pki.caCert }) });
      expect((await withCert.registerRunner({ token: 'REGTOKEN1234567890ab', runUntagged: true })).status).toBe(201);
      expect((await withoutCert.registerRunner({ token: 'REGTOKEN1234567890ab', runUntagged: true })).status).toBe(-1);
      await Promise.all([withCert.close(), withoutCert.close()]);

      // git smart HTTP sits behind the same handshake: with the certificate, the server answers (and
      // asks for credentials, 401); without it, the connection never gets that far.
      const ca = `http.sslCAInfo=${pki.caCert}`;
      const answered = await lsRemote(`${url}/acme/app.git`, [ca, `http.sslCert=${pki.clientCert}`, `http.sslKey=${pki.clientKey}`]);
      expect(answered.exitCode).not.toBe(0);
      expect(answered.stderr).toMatch(/Authentication failed|could not read Username/);
      const refused = await lsRemote(`${url}/acme/app.git`, [ca]);
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).not.toMatch(/Authentication failed|could not read Username/);
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });

  it('refuses an unusable certificate, key or CA with exit 2 naming the flag and the file', async () => {
    const missing = await serve(['--tls-cert', join(pki.dir, 'nope.crt'), '--tls-key', pki.serverKey]);
    expect(missing.exitCode).toBe(2);
    expect(missing.all).toContain(`--tls-cert ${join(pki.dir, 'nope.crt')}: cannot read it: no such file`);
    const noKey = await serve(['--tls-cert', pki.serverCert]);
    expect(noKey.exitCode).toBe(2);
    expect(noKey.all).toContain('needs --tls-key too');
    const wrongKey = await serve(['--tls-cert', pki.serverCert, '--tls-key', pki.clientKey]);
    expect(wrongKey.exitCode).toBe(2);
    expect(wrongKey.all).toContain(`--tls-key ${pki.clientKey} is not the private key of the certificate in --tls-cert`);
    const caAlone = await serve(['--tls-client-ca', pki.caCert]);
    expect(caAlone.exitCode).toBe(2);
    expect(caAlone.all).toContain('--tls-client-ca needs --tls-cert and --tls-key');
    for (const result of [missing, noKey, wrongKey, caAlone]) expect(result.all).not.toMatch(/\n\s+at /);
  });
});
