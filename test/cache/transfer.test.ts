/**
 * Faults a real store cannot be made to show on demand, from small real servers on 127.0.0.1: one
 * that never answers, one that trickles past the request's deadline, one that is full (507), one
 * that cuts a body short. Each ends in a CacheError within a bound (the retries counted), the local
 * copy untouched, no temp file left.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cacheTransport, downloadCacheFile, uploadCacheFile, type TransferOptions } from '../../src/cache/index.js';
import { removeTempDirs, tempDir } from '../artifacts/fixtures.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await removeTempDirs();
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: URL; requests: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    count += 1;
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/bucket/project/1/key?X-Amz-Signature=secret`), requests: () => count };
}

function options(extra: Partial<TransferOptions> = {}): TransferOptions & { retried: string[] } {
  const retried: string[] = [];
  return { transport: cacheTransport(), requestTimeoutMs: 2000, signal: new AbortController().signal, retryDelayMs: 10, headersTimeoutMs: 500, stallTimeoutMs: 500, onRetry: (error) => retried.push(error.message), retried, ...extra };
}

describe('cache transfers when the store misbehaves', () => {
  it('gives up on a store that never answers after two retries, within the bound', async () => {
    const store = await serve(() => undefined);
    const file = join(await tempDir(), 'cache.zip');
    const opts = options();
    const started = Date.now();
    await expect(downloadCacheFile({ url: store.url, headers: {} }, file, opts)).rejects.toMatchObject({ code: 'CACHE_DOWNLOAD_FAILED', message: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/bucket\/project\/1\/key: no response headers within 0\.5 s/) });
    expect(store.requests()).toBe(3);
    expect(opts.retried).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('stops a download that trickles past CACHE_REQUEST_TIMEOUT, keeping the local copy as it was', async () => {
    const store = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '1000000', 'last-modified': new Date(Date.now() + 3_600_000).toUTCString() });
      const timer = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(timer));
    });
    const dir = await tempDir();
    const file = join(dir, 'cache.zip');
    await writeFile(file, 'the old copy');
    await expect(downloadCacheFile({ url: store.url, headers: {} }, file, options({ requestTimeoutMs: 700, retries: 0 }))).rejects.toMatchObject({ message: expect.stringMatching(/no complete answer within 1 s \(CACHE_REQUEST_TIMEOUT\)/) });
    expect(await readFile(file, 'utf8')).toBe('the old copy');
    expect(await readdir(dir)).toEqual(['cache.zip']);
  });

  it('retries a full store (507) and reports it in GitLab Runner\'s words', async () => {
    const store = await serve((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(507, { 'content-type': 'application/xml' }).end('<?xml version="1.0"?><Error><Code>XMinioStorageFull</Code><Message>Storage backend has reached its\n minimum free drive threshold.</Message></Error>'));
    });
    const file = join(await tempDir(), 'cache.zip');
    await writeFile(file, 'archive');
    const opts = options();
    await expect(uploadCacheFile({ url: store.url, headers: {} }, file, opts)).rejects.toMatchObject({
      code: 'CACHE_UPLOAD_FAILED',
      message: expect.stringMatching(/key: received: 507 Insufficient Storage\. Request failed with code: XMinioStorageFull, message: Storage backend has reached its minimum free drive threshold\.$/),
    });
    expect(store.requests()).toBe(3);
  });

  it('does not retry a refusal (403), and never names the signature', async () => {
    const store = await serve((_req, res) => res.writeHead(403).end('<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>'));
    const error = (await downloadCacheFile({ url: store.url, headers: {} }, join(await tempDir(), 'cache.zip'), options()).catch((caught: unknown) => caught)) as Error;
    expect(store.requests()).toBe(1);
    expect(error.message).toMatch(/received: 403 Forbidden\. Request failed with code: AccessDenied, message: Access Denied/);
    expect(error.message).not.toContain('secret');
  });

  it('retries a body cut short and leaves no partial file', async () => {
    let attempt = 0;
    const store = await serve((_req, res) => {
      attempt += 1;
      res.writeHead(200, { 'content-length': '100' });
      if (attempt < 3) res.end('cut');
      else res.end('y'.repeat(100));
    });
    const dir = await tempDir();
    const file = join(dir, 'cache.zip');
    const opts = options();
    expect(await downloadCacheFile({ url: store.url, headers: {} }, file, opts)).toMatchObject({ kind: 'downloaded', bytes: 100 });
    expect(opts.retried).toHaveLength(2);
    expect(await readdir(dir)).toEqual(['cache.zip']);
  });

  it('puts with the signed headers, Content-Type application/octet-stream and a Content-Length', async () => {
    let seen: IncomingMessage | undefined;
    let body = '';
    const store = await serve((req, res) => {
      seen = req;
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => res.writeHead(200).end());
    });
    const file = join(await tempDir(), 'cache.zip');
    await writeFile(file, 'zip bytes');
    await uploadCacheFile({ url: store.url, headers: { 'x-amz-meta-cachekey': 'deps' } }, file, options());
    expect(seen?.method).toBe('PUT');
    expect(seen?.url).toBe('/bucket/project/1/key?X-Amz-Signature=secret');
    expect(seen?.headers).toMatchObject({ 'content-type': 'application/octet-stream', 'content-length': '9', 'x-amz-meta-cachekey': 'deps' });
    expect(body).toBe('zip bytes');
  });

  it('rethrows the job\'s own abort as it is', async () => {
    const store = await serve(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('job canceled')), 100);
    await expect(downloadCacheFile({ url: store.url, headers: {} }, join(await tempDir(), 'cache.zip'), options({ signal: controller.signal, headersTimeoutMs: 30_000, requestTimeoutMs: 60_000 }))).rejects.toThrow('job canceled');
  });
});
