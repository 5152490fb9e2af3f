/**
 * An unusable TLS file is a clear error before anything is sent: exit 2, the file and the flag,
 * environment name or config.toml key named, no stack trace, no blame on --url.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { cli } from './cli.js';
import { startDaemon } from './daemon.js';
import { waitUntil } from './helpers.js';

let dir: string;
let pki: Pki;
let t: TestServer;
let missing: string;
let garbage: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ci-runner-tls-errors-'));
  pki = await createPki();
  t = await startTestServer();
  missing = join(dir, 'missing-ca.pem');
  garbage = join(dir, 'garbage.pem');
  await writeFile(garbage, 'hello\n');
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
  await rm(pki.dir, { recursive: true, force: true });
});

function expectClearRefusal(result: { exitCode?: number | undefined; all?: string }, text: string): void {
  expect(result.exitCode, result.all).toBe(2);
  expect(result.all).toContain(text);
  expect(result.all).not.toMatch(/\n\s+at |ENOENT/);
}

describe('unusable TLS files', () => {
  it('run-once: names the flag, or the environment name it came from', async () => {
    const flag = await cli(['run-once', '--url', t.url, '--token', 'tok12345', '--tls-ca-file', missing, '--wait-timeout', '1s']);
    expectClearRefusal(flag, `--tls-ca-file ${missing}: cannot read it: no such file`);
    const env = await cli(['run-once', '--url', t.url, '--token', 'tok12345', '--wait-timeout', '1s'], { env: { CI_SERVER_TLS_CA_FILE: garbage } });
    expectClearRefusal(env, `CI_SERVER_TLS_CA_FILE ${garbage}: not a CA bundle`);
    const halfPair = await cli(['run-once', '--url', t.url, '--token', 'tok12345', '--tls-cert-file', pki.clientCert, '--wait-timeout', '1s']);
    expectClearRefusal(halfPair, `--tls-cert-file ${pki.clientCert} needs --tls-key-file too`);
  });

  it('register: refuses before asking the coordinator, without blaming --url', async () => {
    const config = join(dir, 'register.toml');
    const result = await cli(['register', '--non-interactive', '-c', config, '--url', t.url, '--registration-token', t.server.registrationToken, '--tls-ca-file', missing]);
    expectClearRefusal(result, `--tls-ca-file ${missing}: cannot read it: no such file`);
    expect(result.all).not.toContain('--url');
    const wrongKey = await cli(['register', '--non-interactive', '-c', config, '--url', t.url, '--registration-token', t.server.registrationToken, '--tls-cert-file', pki.clientCert, '--tls-key-file', pki.serverKey]);
    expectClearRefusal(wrongKey, `--tls-key-file ${pki.serverKey} is not the private key of the certificate in --tls-cert-file ${pki.clientCert}`);
  });

  it('run and verify: name the config line, the key and the runner', async () => {
    const config = join(dir, 'config.toml');
    await writeFile(config, `concurrent = 1\n\n[[runners]]\n  name = "private"\n  url = "${t.url}"\n  token = "tok12345"\n  tls-ca-file = "${missing}"\n`);
    expectClearRefusal(await cli(['run', '-c', config]), `${config}:7: \`tls-ca-file\` of runner "private": ${missing}: cannot read it: no such file`);
    expectClearRefusal(await cli(['verify', '-c', config]), `tls-ca-file of runner "private" ${missing}: cannot read it: no such file`);
  });

  it('run: a reload to a config with a missing file is refused, naming it, and the old config kept', async () => {
    const config = join(dir, 'reload.toml');
    const { token } = await t.registerRunner();
    const entry = `[[runners]]\n  name = "reloaded"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${join(dir, 'builds')}"\n`;
    await writeFile(config, `check_interval = 1\n${entry}`);
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('polling for jobs'), 30_000, 'daemon polling');
      await writeFile(config, `check_interval = 1\n${entry}  tls-ca-file = "${missing}"\n`);
      daemon.child.kill('SIGHUP');
      await waitUntil(() => daemon.output().includes('keeping the old one'), 30_000, 'reload refused');
      expect(daemon.output()).toContain(`${missing}: cannot read it: no such file`);
      // Still polling with the old entry: a queued job runs.
      const p = await t.pipeline('after-reload:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - echo still here\n');
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 30_000);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
  });

  it('verify, unregister and list: one entry\'s missing file does not stop work on another', async () => {
    const config = join(dir, 'two.toml');
    const { token } = await t.registerRunner();
    await writeFile(config, `[[runners]]\n  name = "broken"\n  url = "${t.url}"\n  token = "tok12345"\n  tls-ca-file = "${missing}"\n\n[[runners]]\n  name = "fine"\n  url = "${t.url}"\n  token = "${token}"\n`);
    const list = await cli(['list', '-c', config]);
    expect(list.exitCode, list.all).toBe(0);
    const verify = await cli(['verify', '-c', config, '--name', 'fine']);
    expect(verify.exitCode, verify.all).toBe(0);
    const unregister = await cli(['unregister', '-c', config, '--name', 'fine']);
    expect(unregister.exitCode, unregister.all).toBe(0);
    expect(await readFile(config, 'utf8')).not.toContain('"fine"');
  });

  it('unregister and verify: a file given on the command line replaces the entry\'s and is checked first', async () => {
    const config = join(dir, 'good.toml');
    await writeFile(config, `[[runners]]\n  name = "plain"\n  url = "${t.url}"\n  token = "tok12345"\n`);
    expectClearRefusal(await cli(['verify', '-c', config, '--tls-ca-file', garbage]), `--tls-ca-file ${garbage}: not a CA bundle`);
    expectClearRefusal(await cli(['unregister', '-c', config, '--name', 'plain', '--tls-ca-file', garbage]), `--tls-ca-file ${garbage}: not a CA bundle`);
    expectClearRefusal(await cli(['unregister', '--url', t.url, '--token', 'tok12345', '--tls-key-file', pki.clientKey]), `--tls-key-file ${pki.clientKey} needs --tls-cert-file too`);
    // CI_SERVER_TLS_CA_FILE (set in every GitLab CI job) does not replace an entry's files: only a flag does.
    const fromEnv = await cli(['verify', '-c', config], { env: { CI_SERVER_TLS_CA_FILE: garbage } });
    expect(fromEnv.exitCode, fromEnv.all).toBe(3);
    expect(fromEnv.all).not.toContain(garbage);
  });
});
