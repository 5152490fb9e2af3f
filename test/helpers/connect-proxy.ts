/**
 * A real HTTP proxy on 127.0.0.1 that tunnels (CONNECT), as corporate proxies in front of https
 * coordinators do, and counts what went through it. With `forward` it also forwards plain requests
 * in absolute form (`GET http://host/path`), as a proxy does for http URLs; with `auth` it asks for
 * that `Proxy-Authorization` (407 otherwise). It refuses any target but 127.0.0.1 (and the names
 * `hosts` maps to a port of it), so a test can never reach further.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';

export interface ConnectProxy {
  /** `http://127.0.0.1:PORT` (https with `tls`) for HTTPS_PROXY. */
  url: string;
  /** `host:port` of every CONNECT, in order. */
  readonly tunnels: string[];
  /** The User-Agent of every CONNECT, in order ('' when none was sent). */
  readonly agents: string[];
  /** Bytes carried from the client to the target, over all tunnels. */
  readonly bytesUp: number;
  /** Plain (non-CONNECT) requests: none are expected for an https coordinator. */
  readonly plainRequests: number;
  /** The absolute URLs forwarded (with `forward`), in order. */
  readonly forwarded: string[];
  /** Requests and tunnels refused with 407 (with `auth`). */
  readonly refusedAuth: number;
  close(): Promise<void>;
}

export interface ProxyOptions {
  /** Forward plain requests in absolute form instead of answering 405. */
  forward?: boolean;
  /** The `Proxy-Authorization` value required of every request and tunnel. */
  auth?: string;
  /** Tunnels to these `host:port` targets go to the given port of 127.0.0.1 (a name no resolver knows, such as Azure's `<account>.blob.localhost:443`). */
  hosts?: Readonly<Record<string, number>>;
}

/** Starts the proxy; with `tls` (PEM certificate and key) clients reach it over https. */
export async function startConnectProxy(tls?: { cert: string; key: string }, options: ProxyOptions = {}): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const agents: string[] = [];
  const forwarded: string[] = [];
  const sockets = new Set<Socket>();
  let bytesUp = 0;
  let plainRequests = 0;
  let refusedAuth = 0;
  const authorized = (req: IncomingMessage): boolean => {
    if (options.auth === undefined || req.headers['proxy-authorization'] === options.auth) return true;
    refusedAuth += 1;
    return false;
  };
  const plain = (req: IncomingMessage, res: ServerResponse): void => {
    plainRequests += 1;
    if (!options.forward) return void res.writeHead(405).end('this proxy only tunnels\n');
    if (!authorized(req)) return void res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' }).end();
    const url = new URL(req.url ?? '/', 'http://invalid');
    if (url.hostname !== '127.0.0.1' || url.protocol !== 'http:') return void res.writeHead(403).end('only 127.0.0.1\n');
    forwarded.push(url.href);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = httpRequest({ host: '127.0.0.1', port: Number(url.port || 80), method: req.method, path: `${url.pathname}${url.search}`, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server: Server = tls ? (createHttpsServer(tls, plain) as unknown as Server) : createServer(plain);
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const mapped = options.hosts?.[target];
    const match = mapped === undefined ? /^127\.0\.0\.1:(\d+)$/.exec(target) : ['', String(mapped)];
    if (!authorized(req)) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\n\r\n');
      return;
    }
    if (!match) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    tunnels.push(target);
    agents.push(req.headers['user-agent'] ?? '');
    const upstream = connect(Number(match[1]), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.on('data', (chunk: Buffer) => {
        bytesUp += chunk.length;
      });
      client.pipe(upstream);
      upstream.pipe(client);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    tunnels,
    agents,
    get bytesUp() {
      return bytesUp;
    },
    get plainRequests() {
      return plainRequests;
    },
    forwarded,
    get refusedAuth() {
      return refusedAuth;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
