/**
 * The runner API over https with a private CA, a client certificate (mutual TLS) and a real CONNECT
 * proxy: the CA and certificate reach the coordinator's TLS session whether it is direct or tunnelled.
 */
import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { readTlsMaterial, type TlsMaterial } from '../../src/client/tls.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let pki: Pki;
let plain: TestServer;
let mutual: TestServer;
/** Mutual TLS with a certificate for the address 127.0.0.1 only, as a coordinator addressed by IP has. */
let byIp: TestServer;
let caOnly: TlsMaterial;
let withCert: TlsMaterial;
const PROXY_VARS = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'] as const;
const savedEnv = Object.fromEntries(PROXY_VARS.map((k) => [k, process.env[k]]));

beforeAll(async () => {
  pki = await createPki();
  const tls = { cert: await pki.read(pki.serverCert), key: await pki.read(pki.serverKey) };
  caOnly = readTlsMaterial({ 'tls-ca-file': pki.caCert });
  withCert = readTlsMaterial({ 'tls-ca-file': pki.caCert, 'tls-cert-file': pki.clientCert, 'tls-key-file': pki.clientKey });
  plain = await startTestServer({ tls, clientTls: caOnly });
  mutual = await startTestServer({ tls: { ...tls, clientCa: await pki.read(pki.caCert) }, clientTls: withCert });
  const ipTls = { cert: await pki.read(pki.ipServerCert), key: await pki.read(pki.ipServerKey), clientCa: await pki.read(pki.caCert) };
  byIp = await startTestServer({ tls: ipTls, clientTls: withCert });
});
afterAll(async () => {
  await plain?.close();
  await mutual?.close();
  await byIp?.close();
  await rm(pki.dir, { recursive: true, force: true });
});
afterEach(() => {
  for (const k of PROXY_VARS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

async function register(url: string, tls: TlsMaterial, registrationToken: string) {
  const client = new RunnerApiClient({ url, tls });
  try {
    return await client.registerRunner({ token: registrationToken, runUntagged: true });
  } finally {
    await client.close();
  }
}

describe('the runner API over https', () => {
  it('serves https URLs and trusts the coordinator only with its private CA', async () => {
    expect(plain.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const trusted = await register(plain.url, caOnly, plain.server.registrationToken);
    expect(trusted.status).toBe(201);
    const untrusted = await register(plain.url, {}, plain.server.registrationToken);
    expect(untrusted.status).toBe(-1);
    expect(untrusted.error?.message).toMatch(/\(the certificate of 127\.0\.0\.1:\d+ comes from a CA this runner does not trust; give that CA with tls-ca-file/);
    const otherCa = await register(plain.url, readTlsMaterial({ 'tls-ca-file': pki.otherCaCert }), plain.server.registrationToken);
    expect(otherCa.error?.message).toMatch(/is not signed by the CA in tls-ca-file/);
  });

  it('presents the client certificate to a coordinator that requires one', async () => {
    const ok = await register(mutual.url, withCert, mutual.server.registrationToken);
    expect(ok.status).toBe(201);
    const refused = await register(mutual.url, caOnly, mutual.server.registrationToken);
    expect(refused.status).toBe(-1);
    // Node only says "socket hang up" or names a TLS alert: the message names the settings that would help.
    expect(refused.error?.message).toMatch(/requires a client certificate, give one with tls-cert-file and tls-key-file/);
  });

  it('keeps the CA and the client certificate for the tunnel through HTTPS_PROXY', async () => {
    const proxy: ConnectProxy = await startConnectProxy();
    try {
      process.env.HTTPS_PROXY = proxy.url;
      delete process.env.NO_PROXY;
      delete process.env.no_proxy;
      const ok = await register(mutual.url, withCert, mutual.server.registrationToken);
      expect(ok.status).toBe(201);
      expect(proxy.tunnels).toEqual([new URL(mutual.url).host]);
      expect(proxy.bytesUp).toBeGreaterThan(0);
      expect(proxy.plainRequests).toBe(0);
      // Without the CA the tunnelled session is refused: the proxy is no way around the check.
      const untrusted = await register(mutual.url, {}, mutual.server.registrationToken);
      expect(untrusted.status).toBe(-1);
    } finally {
      await proxy.close();
    }
  });

  it('checks the certificate of a coordinator addressed by IP against that IP inside the tunnel, with mutual TLS', async () => {
    const proxy = await startConnectProxy();
    try {
      process.env.HTTPS_PROXY = proxy.url;
      delete process.env.NO_PROXY;
      delete process.env.no_proxy;
      expect(byIp.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ok = await register(byIp.url, withCert, byIp.server.registrationToken);
      expect(ok.status, ok.error?.message).toBe(201);
      expect(proxy.tunnels).toEqual([new URL(byIp.url).host]);
    } finally {
      await proxy.close();
    }
  });

  it('trusts an https proxy whose certificate comes from the same private CA', async () => {
    const proxy = await startConnectProxy({ cert: await pki.read(pki.serverCert), key: await pki.read(pki.serverKey) });
    try {
      process.env.HTTPS_PROXY = proxy.url;
      delete process.env.NO_PROXY;
      delete process.env.no_proxy;
      const ok = await register(mutual.url, withCert, mutual.server.registrationToken);
      expect(ok.status, ok.error?.message).toBe(201);
      expect(proxy.tunnels).toEqual([new URL(mutual.url).host]);
    } finally {
      await proxy.close();
    }
  });

  it('goes direct, still with the CA, for a host in NO_PROXY', async () => {
    const proxy = await startConnectProxy();
    try {
      process.env.HTTPS_PROXY = proxy.url;
      process.env.NO_PROXY = '127.0.0.1';
      const ok = await register(plain.url, caOnly, plain.server.registrationToken);
      expect(ok.status).toBe(201);
      expect(proxy.tunnels).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});
