/**
 * The runner API's transport on Node's http: proxies from the environment as Go and curl read them,
 * plain-http coordinators through a proxy in absolute form (with the proxy's user and password),
 * refused tunnels, deadlines, cut-off bodies and connection reuse — against real servers and a real
 * proxy on 127.0.0.1.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { send, Transport } from '../../src/client/transport.js';
import { Agent, ProxyAgent } from 'undici';
import { bypassed, parseProxyUrl, proxyFor } from '../../src/client/proxy-env.js';
import { worthRetrying } from '../../src/client/retryable.js';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { startConnectProxy } from '../helpers/connect-proxy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PROXY_VARS = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'] as const;
const savedEnv = Object.fromEntries(PROXY_VARS.map((k) => [k, process.env[k]]));
function clearProxyEnv(): void {
  for (const k of PROXY_VARS) delete process.env[k];
}
afterEach(() => {
  for (const k of PROXY_VARS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

/** A bare server for answers the reference server would never give; counts connections. */
async function rawServer(handler: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer(handler);
  server.on('connection', (s: Socket) => {
    connections += 1;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** An upload body that never ends unless the request stops reading it; says whether it was closed. */
function endlessUpload(): { source: Readable; destroyed: () => boolean; sent: () => number } {
  let destroyed = false;
  let sent = 0;
  const source = new Readable({
    read() {
      sent += 16 * 1024;
      this.push(Buffer.alloc(16 * 1024, 1));
    },
    destroy(error, callback) {
      destroyed = true;
      callback(error);
    },
  });
  return { source, destroyed: () => destroyed, sent: () => sent };
}

describe('which proxy a request takes', () => {
  const env = (vars: Record<string, string>): NodeJS.ProcessEnv => vars;

  it('reads HTTP_PROXY for http and HTTPS_PROXY for https, without falling back from one to the other', () => {
    const both = env({ HTTP_PROXY: 'http://p1:3128', HTTPS_PROXY: 'http://p2:3128' });
    expect(proxyFor(new URL('http://ci.example/'), both)?.host).toBe('p1:3128');
    expect(proxyFor(new URL('https://ci.example/'), both)?.host).toBe('p2:3128');
    expect(proxyFor(new URL('https://ci.example/'), env({ HTTP_PROXY: 'http://p1:3128' }))).toBeUndefined();
    expect(proxyFor(new URL('http://ci.example/'), env({ http_proxy: 'p3:8080' }))?.href).toBe('http://p3:8080/');
  });

  it('follows NO_PROXY: hosts with their subdomains, leading dots, ports, addresses, ranges and *', () => {
    const url = (s: string): URL => new URL(s);
    expect(bypassed(url('http://ci.example.com/'), 'example.com')).toBe(true);
    expect(bypassed(url('http://example.com/'), 'example.com')).toBe(true);
    expect(bypassed(url('http://notexample.com/'), 'example.com')).toBe(false);
    expect(bypassed(url('http://example.com/'), '.example.com')).toBe(false);
    expect(bypassed(url('http://a.example.com/'), '*.example.com')).toBe(true);
    expect(bypassed(url('http://ci.example.com:8080/'), 'ci.example.com:8080')).toBe(true);
    expect(bypassed(url('http://ci.example.com/'), 'ci.example.com:8080')).toBe(false);
    expect(bypassed(url('http://10.1.2.3/'), '10.0.0.0/8')).toBe(true);
    expect(bypassed(url('http://11.1.2.3/'), '10.0.0.0/8, 192.168.0.1')).toBe(false);
    expect(bypassed(url('http://192.168.0.1:80/'), 'a.b 192.168.0.1')).toBe(true);
    expect(bypassed(url('http://[::1]:8080/'), '[::1]:8080')).toBe(true);
    expect(bypassed(url('http://[fd00::5]/'), 'fd00::/8')).toBe(true);
    expect(bypassed(url('http://anything/'), ' * ')).toBe(true);
    expect(bypassed(url('http://CI.Example.COM/'), 'ci.example.com')).toBe(true);
    expect(bypassed(url('https://ci.example.com/'), 'ci.example.com:443')).toBe(true);
    expect(bypassed(url('https://ci.example.com/'), 'ci.example.com:80')).toBe(false);
    expect(bypassed(url('http://10.1.2.3:8080/'), '10.0.0.0/8:8080')).toBe(true);
    expect(bypassed(url('http://10.1.2.3:9090/'), '10.0.0.0/8:8080')).toBe(false);
    expect(bypassed(url('http://192.168.1.7/'), '192.168.1.0/24,other')).toBe(true);
    expect(bypassed(url('http://a.b.example.com/'), '*.example.com')).toBe(true);
    expect(bypassed(url('http://example.com/'), '*.example.com')).toBe(false);
    expect(bypassed(url('http://[fd00::5]/'), '[fd00::5]')).toBe(true);
    expect(bypassed(url('http://ci.example.com/'), '')).toBe(false);
  });

  it('says what is wrong with a proxy URL it cannot use', () => {
    expect(() => parseProxyUrl('socks5://p:1080')).toThrow(/socks5 proxies are not supported/);
    expect(() => parseProxyUrl('http://[bad')).toThrow(/is not a URL/);
  });

  it('reads upper case before lower case, as Go does, and an empty NO_PROXY as unset', () => {
    const vars = env({ HTTPS_PROXY: 'http://upper:3128', https_proxy: 'http://lower:3128' });
    expect(proxyFor(new URL('https://ci.example/'), vars)?.host).toBe('upper:3128');
    expect(proxyFor(new URL('https://ci.example/'), env({ HTTPS_PROXY: '', https_proxy: 'http://lower:3128' }))?.host).toBe('lower:3128');
    expect(proxyFor(new URL('https://ci.example/'), env({ HTTPS_PROXY: 'http://p:1', NO_PROXY: '', no_proxy: 'ci.example' }))).toBeUndefined();
    expect(proxyFor(new URL('https://ci.example/'), env({ HTTPS_PROXY: 'http://p:1', NO_PROXY: 'other.example', no_proxy: 'ci.example' }))?.host).toBe('p:1');
  });

  it('takes one undici dispatcher per coordinator and per proxy, reused by every request', () => {
    clearProxyEnv();
    const transport = new Transport();
    const https = new URL('https://ci.example/ci/api/v1/');
    const direct = transport.route(https);
    expect(direct.dispatcher).toBeInstanceOf(Agent);
    expect(direct.proxy).toBeUndefined();
    process.env.HTTPS_PROXY = 'http://proxy.example:3128';
    const proxied = transport.route(https);
    expect(proxied.dispatcher).toBeInstanceOf(ProxyAgent);
    expect(proxied.proxy?.host).toBe('proxy.example:3128');
    expect(transport.route(new URL('https://ci.example/ci/api/v1/builds/1.json')).dispatcher).toBe(proxied.dispatcher);
    process.env.NO_PROXY = '.example';
    expect(transport.route(https).dispatcher).toBe(direct.dispatcher);
    void transport.close();
  });

  it('reports a proxy URL that is not one as an error no retry mends', async () => {
    clearProxyEnv();
    process.env.HTTPS_PROXY = 'http://[not-a-host';
    const client = new RunnerApiClient({ url: 'https://ci.example' });
    try {
      const result = await client.verifyRunner('token');
      expect(result).toMatchObject({ status: -1, outcome: 'retry' });
      expect((result.error as { code?: string }).code).toBe('PROXY_URL_INVALID');
      expect(worthRetrying(result)).toBe(false);
    } finally {
      await client.close();
    }
  });
});

describe('a plain-http coordinator through HTTP_PROXY', () => {
  it('sends the API in absolute form with the proxy user and password, on one kept-alive connection', async () => {
    const proxy = await startConnectProxy(undefined, { forward: true, auth: `Basic ${Buffer.from('ci user:p@ss').toString('base64')}` });
    const client = new RunnerApiClient({ url: t.url });
    try {
      clearProxyEnv();
      const target = new URL(proxy.url);
      target.username = 'ci%20user';
      target.password = 'p%40ss';
      process.env.HTTP_PROXY = target.href;
      const ok = await client.registerRunner({ token: t.server.registrationToken, runUntagged: true });
      expect(ok.status, ok.error?.message).toBe(201);
      const verified = await client.verifyRunner(ok.runner!.token);
      expect(verified.alive).toBe(true);
      expect(proxy.forwarded).toEqual([`${t.url}/ci/api/v1/runners/register.json`, `${t.url}/ci/api/v1/builds/-1`]);
      expect(proxy.tunnels).toEqual([]);
      expect(proxy.refusedAuth).toBe(0);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it('reports a proxy that wants credentials it was not given as the proxy\'s refusal, saying what to give', async () => {
    const proxy = await startConnectProxy(undefined, { forward: true, auth: 'Basic eDp5' });
    const client = new RunnerApiClient({ url: t.url });
    try {
      clearProxyEnv();
      process.env.HTTP_PROXY = proxy.url;
      const result = await client.verifyRunner('token');
      expect(result.status).toBe(-1);
      expect(result.error?.message).toMatch(/the proxy 127\.0\.0\.1:\d+ refused the request to 127\.0\.0\.1:\d+: HTTP 407 .*give user and password in the proxy URL/);
      expect(proxy.refusedAuth).toBe(1);
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

describe('an https coordinator through a proxy that refuses the tunnel', () => {
  it('is a transport error that says the proxy refused and why', async () => {
    const proxy = await startConnectProxy(undefined, { auth: 'Basic eDp5' });
    const client = new RunnerApiClient({ url: 'https://127.0.0.1:9' });
    try {
      clearProxyEnv();
      process.env.HTTPS_PROXY = proxy.url;
      const result = await client.verifyRunner('token');
      expect(result.status).toBe(-1);
      expect(result.outcome).toBe('retry');
      expect(result.error?.message).toMatch(/the proxy 127\.0\.0\.1:\d+ refused the tunnel to 127\.0\.0\.1:9: HTTP 407 .*give user and password in the proxy URL/);
      expect((result.error as { code?: string }).code).toBe('PROXY_TUNNEL_REFUSED');
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

describe('deadlines, cut-off bodies and connection reuse', () => {
  it('gives up on a server that never answers after the headers deadline, as a retryable transport error', async () => {
    const silent = await rawServer(() => undefined);
    const client = new RunnerApiClient({ url: silent.url, requestTimeoutMs: 300 });
    try {
      clearProxyEnv();
      const result = await client.verifyRunner('token');
      expect(result.status).toBe(-1);
      expect(result.outcome).toBe('retry');
      expect(result.error?.message).toMatch(/no response headers within 0\.3 s/);
    } finally {
      await client.close();
      await silent.close();
    }
  });

  it('reads a build body cut off before its announced length as a retry, never as a build', async () => {
    const cut = await rawServer((req, res) => {
      req.resume();
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"id": 1, "token": "x"');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const client = new RunnerApiClient({ url: cut.url });
    try {
      clearProxyEnv();
      const result = await client.requestBuild('token', undefined);
      expect(result).toMatchObject({ kind: 'error', status: -1, outcome: 'retry' });
    } finally {
      await client.close();
      await cut.close();
    }
  });

  // undici's pool may open a second connection when a call follows the previous one's end in the
  // same tick; both are then kept alive and reused, never one per call.
  it('reuses kept-alive connections for a runner\'s successive calls', async () => {
    const ok = await rawServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(404, { 'content-type': 'application/json' }).end('{}'));
    });
    const client = new RunnerApiClient({ url: ok.url });
    try {
      clearProxyEnv();
      for (let i = 0; i < 20; i += 1) expect((await client.verifyRunner('token')).alive).toBe(true);
      expect(ok.connections()).toBeLessThanOrEqual(2);
    } finally {
      await client.close();
      await ok.close();
    }
  });

  it('makes a new connection once the kept one is older than connection_max_age', async () => {
    const ok = await rawServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(404, { 'content-type': 'application/json' }).end('{}'));
    });
    const aged = new RunnerApiClient({ url: ok.url, connectionMaxAgeMs: 300 });
    try {
      clearProxyEnv();
      for (let i = 0; i < 3; i += 1) {
        expect((await aged.verifyRunner('token')).alive).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      // Kept alive for 30 s otherwise (the test above): one connection per call here.
      expect(ok.connections()).toBe(3);
    } finally {
      await aged.close();
      await ok.close();
    }
  });

  it('gives up on an upload the server stops reading, after the progress deadline, and closes its source', async () => {
    // The handler never reads the body: Node's server then stops reading the socket, and the upload stalls.
    const deaf = await rawServer(() => undefined);
    const upload = endlessUpload();
    const transport = new Transport();
    try {
      clearProxyEnv();
      const response = await send(transport, { method: 'POST', url: new URL(`${deaf.url}/upload`), body: upload.source, bodyTimeoutMs: 300 });
      expect(response.status).toBe(-1);
      expect(response.error?.message).toBe('no progress sending the request for 0.3 s');
      expect(upload.destroyed()).toBe(true);
    } finally {
      await transport.close();
      await deaf.close();
    }
  });

  it('closes a streamed body\'s source when the server drops the upload halfway', async () => {
    const dropping = await rawServer((req) => {
      let seen = 0;
      req.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > 64 * 1024) req.socket.destroy();
      });
    });
    const upload = endlessUpload();
    const transport = new Transport();
    try {
      clearProxyEnv();
      const response = await send(transport, { method: 'POST', url: new URL(`${dropping.url}/upload`), body: upload.source });
      expect(response.status).toBe(-1);
      expect(upload.destroyed()).toBe(true);
      expect(upload.sent()).toBeLessThan(64 * 1024 * 1024);
    } finally {
      await transport.close();
      await dropping.close();
    }
  });
});
