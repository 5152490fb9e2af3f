/**
 * A real HTTP proxy on 127.0.0.1 that only tunnels (CONNECT), as corporate proxies in front of https
 * coordinators do, and counts what went through it. It refuses any target but 127.0.0.1, so a test
 * can never reach further.
 */
import { createServer, type Server } from 'node:http';
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
  close(): Promise<void>;
}

/** Starts the proxy; with `tls` (PEM certificate and key) clients reach it over https. */
export async function startConnectProxy(tls?: { cert: string; key: string }): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const agents: string[] = [];
  const sockets = new Set<Socket>();
  let bytesUp = 0;
  let plainRequests = 0;
  const refuse = (_req: unknown, res: { writeHead(status: number): { end(text: string): void } }): void => {
    plainRequests += 1;
    res.writeHead(405).end('this proxy only tunnels\n');
  };
  const server: Server = tls ? (createHttpsServer(tls, refuse) as unknown as Server) : createServer(refuse);
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const match = /^127\.0\.0\.1:(\d+)$/.exec(target);
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
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
