/**
 * The whole path over https with a private CA made in the test, as a user behind one runs it: the
 * real CLI registers, polls, clones with a submodule, sends the trace, uploads and downloads
 * artifacts — with mutual TLS, and through a real CONNECT proxy — and the job's own tools trust the
 * coordinator through CI_SERVER_TLS_CA_FILE.
 */
import { logText } from '../helpers/log-text.js';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTlsMaterial } from '../../src/client/tls.js';
import { startConnectProxy } from '../helpers/connect-proxy.js';
import { createGitRepo, git } from '../helpers/git.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { startDaemon } from './daemon.js';
import { IMAGES, skipDocker } from '../executors/docker/engine.js';
import { workDirs } from './helpers.js';

let pki: Pki;
let lib: string;
const servers: TestServer[] = [];

const PIPELINE = `
stages: [build, test]
build:
  stage: build
  variables:
    GIT_SUBMODULE_STRATEGY: normal
  script:
    - cat lib/lib.txt
    - openssl x509 -in "$CI_SERVER_TLS_CA_FILE" -noout -subject
    - echo "built over https" > out.txt
  artifacts:
    paths: [out.txt]
test:
  stage: test
  script:
    - cat out.txt
`;

/**
 * An https reference server (mutual TLS with `mutual`) whose project has submodule `lib` on the same
 * server; with `ipOnly` its certificate names the address 127.0.0.1 and nothing else.
 */
async function httpsServer(mutual: boolean, { ipOnly = false } = {}): Promise<TestServer> {
  const [cert, key] = ipOnly ? [pki.ipServerCert, pki.ipServerKey] : [pki.serverCert, pki.serverKey];
  const tls = { cert: await pki.read(cert), key: await pki.read(key), ...(mutual ? { clientCa: await pki.read(pki.caCert) } : {}) };
  const clientTls = readTlsMaterial({ 'tls-ca-file': pki.caCert, 'tls-cert-file': pki.clientCert, 'tls-key-file': pki.clientKey });
  const t = await startTestServer({ tls, clientTls, projects: [{ name: 'group/lib', path: lib }] });
  servers.push(t);
  await git(t.projectPath, ['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'lib']);
  await git(t.projectPath, ['config', '-f', '.gitmodules', 'submodule.lib.url', '../lib.git']);
  await git(t.projectPath, ['add', '.gitmodules']);
  await git(t.projectPath, ['commit', '-q', '-m', 'add submodule lib']);
  return t;
}

const tlsFlags = (): string[] => ['--tls-ca-file', pki.caCert, '--tls-cert-file', pki.clientCert, '--tls-key-file', pki.clientKey];

/** Registers through the CLI and returns the runner token from the written config. */
async function register(t: TestServer, config: string, extra: string[] = []): Promise<string> {
  const result = await cli(['register', '--non-interactive', '-c', config, '--url', t.url, '--registration-token', t.server.registrationToken, '--name', 'tls-runner', ...extra]);
  expect(result.exitCode, result.all).toBe(0);
  const token = /token = "([^"]+)"/.exec(await readFile(config, 'utf8'))?.[1];
  expect(token).toBeTruthy();
  return token!;
}

/** Runs the two-job pipeline with two `run-once` processes; returns both traces. */
async function runPipeline(t: TestServer, token: string, args: string[], env: Record<string, string> = {}) {
  const p = await t.pipeline(PIPELINE);
  const d = await workDirs();
  const traces: string[] = [];
  for (const job of p.jobs) {
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', ...args], { env });
    const trace = logText(await t.server.getTrace(job.id));
    expect(result.exitCode, `${result.all}\n${trace}`).toBe(0);
    expect(t.server.getJob(job.id)?.status).toBe('success');
    traces.push(trace);
  }
  // The TLS settings reached git through its environment only: no git config file of the checkout
  // or its submodules names them.
  const configs = (await readdir(d.builds, { recursive: true, withFileTypes: true })).filter((e) => e.isFile() && e.name === 'config' && e.parentPath.includes('.git'));
  expect(configs.length).toBeGreaterThan(1);
  for (const file of configs) expect(await readFile(join(file.parentPath, file.name), 'utf8')).not.toMatch(/ssl/i);
  await rm(d.root, { recursive: true, force: true });
  return traces;
}

beforeAll(async () => {
  pki = await createPki();
  lib = await createGitRepo({ 'lib.txt': 'from the submodule over https\n' });
});
afterAll(async () => {
  await Promise.all(servers.map((t) => t.close()));
  await rm(pki.dir, { recursive: true, force: true });
  await rm(lib, { recursive: true, force: true });
});

describe('a coordinator behind a private CA', () => {
  it('registers, runs a job that clones a submodule and passes artifacts on, with mutual TLS', async () => {
    const t = await httpsServer(true);
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    const token = await register(t, config, tlsFlags());
    const written = await readFile(config, 'utf8');
    expect(written).toContain(`tls-ca-file = "${pki.caCert}"`);
    expect(written).toContain(`tls-cert-file = "${pki.clientCert}"`);
    expect(written).toContain(`tls-key-file = "${pki.clientKey}"`);
    // A host-wide GIT_SSL_CAINFO (common where a corporate bundle is set up) must not hide the CA from git.
    const [build, test] = await runPipeline(t, token, tlsFlags(), { GIT_SSL_CAINFO: '/etc/ssl/certs/ca-certificates.crt' });
    expect(build).toContain('from the submodule over https');
    expect(build).toContain('subject=CN = test-ca');
    expect(test).toContain('built over https');
    // verify and unregister reach it with the files from config.toml.
    const verify = await cli(['verify', '-c', config]);
    expect(verify.exitCode, verify.all).toBe(0);
    expect(verify.stdout).toContain('is alive');
    const unregister = await cli(['unregister', '-c', config, '--name', 'tls-runner']);
    expect(unregister.exitCode, unregister.all).toBe(0);
    await rm(d.root, { recursive: true, force: true });
  });

  it('runs jobs from config.toml with `run`, the entry\'s tls-* keys used for the API and git', async () => {
    const t = await httpsServer(true);
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await register(t, config, [...tlsFlags(), '--builds-dir', d.builds, '--cache-dir', d.cache]);
    const p = await t.pipeline(PIPELINE);
    const daemon = startDaemon(config);
    try {
      for (const job of p.jobs) await t.waitForJob(job.id, (j) => j.status === 'success' || j.status === 'failed', 60_000);
      const traces = await Promise.all(p.jobs.map(async (job) => logText(await t.server.getTrace(job.id))));
      expect(p.jobs.map((job) => t.server.getJob(job.id)?.status), `${traces.join('\n')}\n${daemon.output()}`).toEqual(['success', 'success']);
      expect(traces[0]).toContain('from the submodule over https');
      expect(traces[1]).toContain('built over https');
    } finally {
      expect(await daemon.stop()).toBe(0);
      await rm(d.root, { recursive: true, force: true });
    }
  });

  it('does the same through an HTTPS_PROXY that only tunnels, git included, with the files named by environment', async () => {
    const t = await httpsServer(true);
    const proxy = await startConnectProxy();
    try {
      const env = { HTTPS_PROXY: proxy.url, NO_PROXY: '', no_proxy: '', CI_SERVER_TLS_CA_FILE: pki.caCert, CI_SERVER_TLS_CERT_FILE: pki.clientCert, CI_SERVER_TLS_KEY_FILE: pki.clientKey };
      const d = await workDirs();
      const config = join(d.root, 'config.toml');
      const reg = await cli(['register', '--non-interactive', '-c', config, '--url', t.url, '--registration-token', t.server.registrationToken, '--name', 'proxied'], { env });
      expect(reg.exitCode, reg.all).toBe(0);
      const token = /token = "([^"]+)"/.exec(await readFile(config, 'utf8'))![1]!;
      const [build, test] = await runPipeline(t, token, [], env);
      expect(build).toContain('from the submodule over https');
      expect(test).toContain('built over https');
      const target = new URL(t.url).host;
      expect(proxy.tunnels.length).toBeGreaterThan(0);
      expect(proxy.tunnels.every((host) => host === target)).toBe(true);
      // git opened its own tunnels (clone and submodule): the CA reached it through the proxy too.
      expect(proxy.agents.filter((agent) => agent.startsWith('git/')).length).toBeGreaterThanOrEqual(2);
      expect(proxy.plainRequests).toBe(0);
      await rm(d.root, { recursive: true, force: true });
    } finally {
      await proxy.close();
    }
  });

  it('run-once reaches a coordinator addressed by IP through HTTPS_PROXY, its certificate checked against the IP, with mutual TLS', async () => {
    const t = await httpsServer(true, { ipOnly: true });
    const proxy = await startConnectProxy();
    try {
      expect(t.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const { token } = await t.registerRunner();
      const p = await t.pipeline('by-ip:\n  script:\n    - echo "reached by IP through the proxy"\n');
      const d = await workDirs();
      const env = { HTTPS_PROXY: proxy.url, NO_PROXY: '', no_proxy: '' };
      const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', ...tlsFlags()], { env });
      const trace = logText(await t.server.getTrace(p.jobs[0]!.id));
      expect(result.exitCode, `${result.all}\n${trace}`).toBe(0);
      expect(result.all).not.toMatch(/altnames/);
      expect(trace).toContain('reached by IP through the proxy');
      expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('success');
      expect(proxy.tunnels.length).toBeGreaterThan(0);
      expect(proxy.tunnels.every((host) => host === new URL(t.url).host)).toBe(true);
      await rm(d.root, { recursive: true, force: true });
    } finally {
      await proxy.close();
    }
  });

  it('trusts <config dir>/certs/<host>.crt for an entry without tls-ca-file, as GitLab Runner does', async () => {
    const t = await httpsServer(false);
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `[[runners]]\n  name = "default-ca"\n  url = "${t.url}"\n  token = "${token}"\n`);
    const untrusted = await cli(['verify', '-c', config]);
    expect(untrusted.exitCode, untrusted.all).toBe(3);
    await mkdir(join(d.root, 'certs'));
    await copyFile(pki.caCert, join(d.root, 'certs', '127.0.0.1.crt'));
    const trusted = await cli(['verify', '-c', config]);
    expect(trusted.exitCode, trusted.all).toBe(0);
    expect(trusted.stdout).toContain('is alive');
    await rm(d.root, { recursive: true, force: true });
  });

  it('gives the job CI_SERVER_TLS_CA_FILE that its own git trusts the coordinator with', async () => {
    const t = await httpsServer(false);
    const d = await workDirs();
    const token = await register(t, join(d.root, 'config.toml'), ['--tls-ca-file', pki.caCert]);
    const p = await t.pipeline(`
own-git:
  variables:
    GIT_STRATEGY: none
  script:
    - GIT_SSL_CAINFO="$CI_SERVER_TLS_CA_FILE" git ls-remote "$CI_REPOSITORY_URL" main
    - if GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt git ls-remote "$CI_REPOSITORY_URL" main 2>/dev/null; then echo "trusted without the CA"; exit 1; fi
`);
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', '--tls-ca-file', pki.caCert]);
    const trace = logText(await t.server.getTrace(p.jobs[0]!.id));
    expect(result.exitCode, `${result.all}\n${trace}`).toBe(0);
    expect(trace).toMatch(/[0-9a-f]{40}\s+refs\/heads\/main/);
    await rm(d.root, { recursive: true, force: true });
  });
});

describe.skipIf(skipDocker)('a coordinator behind a private CA, docker executor', () => {
  it('clones on the host with the client certificate and gives the container CI_SERVER_TLS_CA_FILE but not the key', async () => {
    const t = await httpsServer(true);
    const d = await workDirs();
    const token = await register(t, join(d.root, 'config.toml'), tlsFlags());
    const script = [
      'cat lib/lib.txt',
      `echo "certificates in the CA file: $(grep -c 'BEGIN CERTIFICATE' "$CI_SERVER_TLS_CA_FILE")"`,
      'ls "$(dirname "$CI_SERVER_TLS_CA_FILE")" | grep -c git-tls || true',
    ];
    const p = await t.pipeline(`in-docker:\n  variables:\n    GIT_SUBMODULE_STRATEGY: normal\n  script:\n${script.map((l) => `    - ${JSON.stringify(l)}\n`).join('')}`);
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s',
      '--executor', 'docker', '--docker-image', IMAGES.sh, '--docker-pull-policy', 'if-not-present', ...tlsFlags()]);
    const trace = logText(await t.server.getTrace(p.jobs[0]!.id));
    expect(result.exitCode, `${result.all}\n${trace}`).toBe(0);
    expect(trace).toContain('from the submodule over https');
    expect(trace).toContain('certificates in the CA file: 1');
    // No git-tls-* file (the client key above all) is left where the container can see it.
    expect(trace).toMatch(/grep -c git-tls \|\| true[^\n]*\n0\n/);
    await rm(d.root, { recursive: true, force: true });
  });
});
