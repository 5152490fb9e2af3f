/**
 * A plain-HTTP stand-in for the kit's API server that forwards every request to it (exec's WebSocket
 * upgrades too) and records what the runner asked for: each pod it created, as sent and as the API
 * server stored it, and the other writes (deletes with their grace period, namespaces, budgets). The
 * kit runs Kubernetes 1.20, which drops the fields it does not know (pod-level resources, AppArmor
 * profiles, match_label_keys): the pod as sent shows that the runner sends them for newer clusters.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';

export interface RecordedPod {
  sent: V1Pod;
  /** The API server's answer: the pod as stored (undefined when it refused it). */
  created?: V1Pod;
  status: number;
  /** The API server's message when it refused the pod. */
  message?: string;
}

export interface RecordingProxy {
  url: string;
  pods: RecordedPod[];
  /** `METHOD path?query` of every request that was not a read. */
  writes: string[];
  close(): Promise<void>;
}

export async function recordingProxy(target: string, ca: Buffer): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const pods: RecordedPod[] = [];
  const writes: string[] = [];
  const forward = (method: string, path: string, headers: IncomingHttpHeaders) => {
    const options = { hostname: upstream.hostname, port: upstream.port, path, method, headers: { ...headers, host: upstream.host }, ca };
    return upstream.protocol === 'https:' ? httpsRequest(options) : httpRequest(options);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      if (method !== 'GET') writes.push(`${method} ${path}`);
      const isPodCreate = method === 'POST' && /\/namespaces\/[^/]+\/pods(\?|$)/.test(path);
      const up = forward(method, path, req.headers);
      up.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!isPodCreate) {
          answer.pipe(res);
          return;
        }
        const out: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => {
          out.push(chunk);
          res.write(chunk);
        });
        answer.on('end', () => {
          res.end();
          const status = answer.statusCode ?? 0;
          const parsed = JSON.parse(Buffer.concat(out).toString('utf8') || '{}') as V1Pod & { message?: string };
          pods.push({ sent: JSON.parse(body.toString('utf8')) as V1Pod, status, ...(status < 300 ? { created: parsed } : { message: parsed.message ?? '' }) });
        });
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  server.on('upgrade', (req, socket, head) => {
    const up = forward(req.method ?? 'GET', req.url ?? '/', req.headers);
    up.on('upgrade', (answer, upSocket, upHead) => {
      const lines = [`HTTP/1.1 101 ${answer.statusMessage ?? 'Switching Protocols'}`];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upHead.length > 0) socket.write(upHead);
      if (head.length > 0) upSocket.write(head);
      upSocket.pipe(socket).pipe(upSocket);
      upSocket.on('error', () => socket.destroy());
      socket.on('error', () => upSocket.destroy());
    });
    up.on('response', (answer) => {
      socket.end(`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}\r\n\r\n`);
    });
    up.on('error', () => socket.destroy());
    up.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pods,
    writes,
    close: async () => {
      // Upgraded (exec) sockets are the server's no more: closing it does not wait for them.
      server.close();
      server.closeAllConnections();
    },
  };
}
