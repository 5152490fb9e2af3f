/**
 * A coordinator that lies: an HTTP proxy on 127.0.0.1 in front of the reference server that rewrites
 * the job it hands out (the `201` of v1's `POST /builds/register` or v4's `POST /jobs/request`) and
 * passes every other request through, recording each one. The runner under test talks to the proxy, so
 * it gets a hostile or odd payload while its trace and final update still reach the real server.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Payload = Record<string, unknown>;

export interface PayloadProxy {
  url: string;
  /** Every request that passed, `METHOD path`. */
  requests: string[];
  /** Applied to the next job payloads; returns the JSON text sent (default: the payload unchanged). */
  rewrite: (payload: Payload) => string;
  close(): Promise<void>;
}

async function body(stream: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const isJobRequest = (req: IncomingMessage): boolean => req.method === 'POST' && /\/builds\/register|\/jobs\/request/.test(req.url ?? '');

/** Starts a proxy to `upstreamUrl` (the reference server's URL). */
export async function startPayloadProxy(upstreamUrl: string): Promise<PayloadProxy> {
  const upstream = new URL(upstreamUrl);
  const proxy: PayloadProxy = {
    url: '',
    requests: [],
    rewrite: (payload) => JSON.stringify(payload),
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer((req, res) => {
    proxy.requests.push(`${req.method} ${req.url}`);
    const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (!(isJobRequest(req) && answer.statusCode === 201)) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      void body(answer).then((raw) => {
        const text = proxy.rewrite(JSON.parse(raw.toString('utf8')) as Payload);
        res.writeHead(201, { ...answer.headers, 'content-length': Buffer.byteLength(text) });
        res.end(text);
      });
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return proxy;
}
