/**
 * A CONNECT tunnel through an HTTP(S) proxy to an https coordinator, and the TLS session inside it.
 * The proxy is reached over TCP, or over TLS for an `https://` proxy (checked against `proxyCa`); the
 * coordinator's TLS session inside the tunnel carries the runner's own CA and client certificate.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
import { hostOf, portOf } from './proxy-env.js';

/** Longest CONNECT answer head read before giving up on the proxy. */
const MAX_HEAD = 16 * 1024;

export class ProxyError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ProxyError';
    this.code = code;
  }
}

/** `Proxy-Authorization` for a proxy URL with user and password, else undefined. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  const pair = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** A TCP or TLS connection to the proxy itself (`proxyContext`: its trusted CAs, else Node's). */
export function connectToProxy(proxy: URL, proxyContext: SecureContext | undefined): Socket {
  const host = hostOf(proxy);
  const port = portOf(proxy);
  if (proxy.protocol !== 'https:') return netConnect({ host, port });
  return tlsConnect({ host, port, ...(isIpLiteral(host) ? {} : { servername: host }), ...(proxyContext ? { secureContext: proxyContext } : {}) });
}

export interface TunnelOptions {
  proxy: URL;
  /** The TLS context for an https proxy's certificate (undefined: Node's default). */
  proxyContext?: SecureContext;
  /** `host:port` of the coordinator. */
  target: { host: string; port: number };
  /** TLS options of the coordinator's session (CA, client certificate and key). */
  tls: ConnectionOptions;
  userAgent?: string;
  timeoutMs: number;
}

/** Opens the tunnel and the coordinator's TLS session in it. */
export async function openTunnel(options: TunnelOptions): Promise<TLSSocket> {
  const socket = connectToProxy(options.proxy, options.proxyContext);
  try {
    await connectThrough(socket, options);
  } catch (error) {
    socket.destroy();
    throw error;
  }
  const { host } = options.target;
  return tlsConnect({ ...options.tls, socket, ...(isIpLiteral(host) ? {} : { servername: host }) });
}

function connectThrough(socket: Socket, options: TunnelOptions): Promise<void> {
  const { proxy, target } = options;
  const authority = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
  const auth = proxyAuthorization(proxy);
  const head =
    `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n` +
    (options.userAgent ? `User-Agent: ${options.userAgent}\r\n` : '') +
    (auth ? `Proxy-Authorization: ${auth}\r\n` : '') +
    '\r\n';
  return new Promise<void>((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => fail(new ProxyError('ETIMEDOUT', `the proxy ${proxy.host} did not answer CONNECT within ${options.timeoutMs / 1000} s`)), options.timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', fail);
      socket.off('close', onClose);
    };
    function fail(error: Error): void {
      cleanup();
      reject(error);
    }
    function onClose(): void {
      fail(new ProxyError('ECONNRESET', `the proxy ${proxy.host} closed the connection before answering CONNECT`));
    }
    function onData(chunk: Buffer): void {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) {
        if (received.length > MAX_HEAD) fail(new ProxyError('EPROTO', `the proxy ${proxy.host} sent an answer to CONNECT longer than ${MAX_HEAD} bytes`));
        return;
      }
      const statusLine = received.subarray(0, received.indexOf('\r\n')).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
      if (!status) return fail(new ProxyError('EPROTO', `the proxy ${proxy.host} answered CONNECT with ${JSON.stringify(statusLine.slice(0, 100))}`));
      const code = Number(status[1]);
      if (code < 200 || code > 299) {
        const why = code === 407 ? ' (proxy authentication required: give user and password in the proxy URL)' : '';
        return fail(new ProxyError('EPROXY', `the proxy ${proxy.host} refused the tunnel to ${authority}: ${statusLine.slice(9, 109)}${why}`));
      }
      cleanup();
      socket.pause();
      // Bytes after the head belong to the tunnel (a proxy does not send any before the client's hello).
      const rest = received.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve();
    }
    socket.on('data', onData);
    socket.once('error', fail);
    socket.once('close', onClose);
    socket.write(head);
  });
}

function isIpLiteral(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
