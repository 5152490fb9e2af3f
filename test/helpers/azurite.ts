/**
 * Microsoft's Azure Storage server (the `azurite` dev dependency), blob service only, started by a test
 * on 127.0.0.1 (a free port), in memory, over HTTPS with the test PKI's server certificate (which also
 * names `*.blob.localhost`), telemetry off. A runner reaches it as Azure is reached,
 * `https://devstoreaccount1.blob.localhost/...`, through the test's CONNECT proxy (which maps that name
 * to Azurite's port): nothing resolves `*.blob.localhost` here, and so the proxy and the private CA
 * are exercised on every request.
 */
import { createHmac } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { Agent, request } from 'undici';
import { startConnectProxy, type ConnectProxy } from './connect-proxy.js';
import type { Pki } from './pki.js';

/** Azurite's well-known development account. */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
/** What a runner's StorageDomain is for Azurite behind the proxy. */
export const AZURITE_DOMAIN = 'blob.localhost';

const BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../node_modules/.bin/azurite-blob');

export interface Azurite {
  port: number;
  /** The CONNECT proxy for HTTPS_PROXY: `devstoreaccount1.blob.localhost:443` goes to Azurite. */
  proxy: ConnectProxy;
  /** Creates a container (shared key auth, straight to Azurite). */
  createContainer(name: string): Promise<void>;
  /** A blob's bytes, its headers (or status 404). */
  getBlob(container: string, name: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>;
  putBlob(container: string, name: string, body: Buffer): Promise<void>;
  stop(): Promise<void>;
}

export async function startAzurite(pki: Pki): Promise<Azurite> {
  const child: ResultPromise = execa(BIN, [
    '--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--skipApiVersionCheck', '--loose',
    '--disableTelemetry', '--silent', '--cert', pki.serverCert, '--key', pki.serverKey,
  ], { stdin: 'ignore', cleanup: true, reject: false, all: true, cwd: dirname(pki.dir), env: { AZURITE_ACCOUNTS: '' } });
  const port = await new Promise<number>((resolvePort, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`azurite did not start: ${seen}`)), 60_000);
    child.all?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const found = /successfully listens on https:\/\/127\.0\.0\.1:(\d+)/.exec(seen);
      if (found) {
        clearTimeout(timer);
        resolvePort(Number(found[1]));
      }
    });
    void child.then(() => reject(new Error(`azurite exited: ${seen}`)));
  });
  const proxy = await startConnectProxy(undefined, { hosts: { [`${AZURITE_ACCOUNT}.${AZURITE_DOMAIN}:443`]: port } });
  const agent = new Agent({ connect: { ca: await pki.read(pki.caCert) } });
  const signed = async (method: string, path: string, query: Record<string, string>, body?: Buffer, extra: Record<string, string> = {}) => {
    const date = new Date().toUTCString();
    const headers: Record<string, string> = { 'x-ms-date': date, 'x-ms-version': '2021-08-06', ...extra, ...(body ? { 'content-length': String(body.length) } : {}) };
    const canonicalHeaders = Object.keys(headers).filter((h) => h.startsWith('x-ms-')).sort().map((h) => `${h}:${headers[h]}\n`).join('');
    const canonicalResource = `/${AZURITE_ACCOUNT}/${AZURITE_ACCOUNT}${path}${Object.keys(query).sort().map((k) => `\n${k}:${query[k]}`).join('')}`;
    // VERB, Content-Encoding, Content-Language, Content-Length, then Content-MD5 … Range (8, empty).
    const toSign = [method, '', '', body && body.length > 0 ? String(body.length) : '', ...Array<string>(8).fill(''), canonicalHeaders + canonicalResource].join('\n');
    headers.authorization = `SharedKey ${AZURITE_ACCOUNT}:${createHmac('sha256', Buffer.from(AZURITE_KEY, 'base64')).update(toSign).digest('base64')}`;
    const search = new URLSearchParams(query).toString();
    return request(`https://127.0.0.1:${port}/${AZURITE_ACCOUNT}${path}${search ? `?${search}` : ''}`, { method: method as 'GET', headers, dispatcher: agent, ...(body ? { body } : {}) });
  };
  return {
    port,
    proxy,
    async createContainer(name) {
      const answer = await signed('PUT', `/${name}`, { restype: 'container' });
      await answer.body.dump();
      if (answer.statusCode !== 201 && answer.statusCode !== 409) throw new Error(`creating container ${name}: HTTP ${answer.statusCode}`);
    },
    async getBlob(container, name) {
      const answer = await signed('GET', `/${container}/${name}`, {});
      return { status: answer.statusCode, headers: answer.headers, body: Buffer.from(await answer.body.arrayBuffer()) };
    },
    async putBlob(container, name, body) {
      const answer = await signed('PUT', `/${container}/${name}`, {}, body, { 'x-ms-blob-type': 'BlockBlob' });
      await answer.body.dump();
      if (answer.statusCode !== 201) throw new Error(`putting ${name}: HTTP ${answer.statusCode}`);
    },
    async stop() {
      await proxy.close();
      await agent.close();
      child.kill('SIGTERM');
      await child;
    },
  };
}

