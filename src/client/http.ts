/**
 * The transport under the runner API client, on Node's own http and https: one set of keep-alive
 * pools per coordinator, the runner's CA and client certificate, and proxies from the environment
 * (`proxy-env.ts`). A request helper never throws for HTTP or network failures — it returns status -1
 * for those, so callers classify every outcome in one place. Only an abort of the caller's own signal
 * rejects.
 *
 * Node's http parser is built in; the idle daemon keeps only this module's few objects (undici, used
 * before, kept ~20 MB more resident: its JavaScript and a WebAssembly parser).
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { pipeline, Readable, type Duplex } from 'node:stream';
import { createSecureContext, type SecureContext } from 'node:tls';
import { TRANSPORT_ERROR } from './outcome.js';
import { hostOf, portOf, proxyFor } from './proxy-env.js';
import { trustedCas, type TlsMaterial } from './tls.js';
import { openTunnel, proxyAuthorization } from './tunnel.js';

export interface TransportOptions {
  /** The runner's checked TLS files (`readTlsMaterial`): private CA, client certificate and key. */
  tls?: TlsMaterial;
  /** Sent on a proxy's CONNECT, as GitLab Runner does. */
  userAgent?: string;
}

/** How long an idle pooled connection is kept, and how long a TCP or tunnel connect may take. */
const IDLE_MS = 30_000;
const CONNECT_MS = 30_000;
/** Most of a body read as text (a build payload is far smaller). */
const MAX_TEXT_BYTES = 32 * 1024 * 1024;
/** Most of an unwanted body read to keep its connection; past it the connection is dropped. */
const MAX_DRAIN_BYTES = 128 * 1024;

/** An https agent whose connections are CONNECT tunnels through `proxy`. */
class TunnelAgent extends HttpsAgent {
  constructor(
    private readonly proxy: URL,
    private readonly proxyContext: SecureContext | undefined,
    private readonly userAgent: string | undefined,
    options: HttpsAgentOptions,
  ) {
    super(options);
  }

  // Node's Agent takes the socket from this callback when none is returned.
  override createConnection(options: RequestOptions & HttpsAgentOptions, callback?: (error: Error | null, socket: Duplex) => void): undefined {
    const { secureContext } = options as { secureContext?: SecureContext };
    const done = callback ?? (() => undefined);
    openTunnel({
      proxy: this.proxy,
      ...(this.proxyContext ? { proxyContext: this.proxyContext } : {}),
      target: { host: String(options.host), port: Number(options.port) },
      tls: secureContext ? { secureContext } : {},
      timeoutMs: CONNECT_MS,
      ...(this.userAgent ? { userAgent: this.userAgent } : {}),
    }).then(
      (socket) => done(null, socket),
      (error: Error) => done(error, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

/** One coordinator's connection pools: direct, and per proxy. `close` ends them all. */
export class Transport {
  private readonly tls: TlsMaterial;
  private readonly agents = new Map<string, HttpAgent>();
  private readonly userAgent: string | undefined;
  private contexts: { origin?: SecureContext; proxy?: SecureContext } | undefined;

  constructor(options: TransportOptions = {}) {
    this.tls = options.tls ?? {};
    this.userAgent = options.userAgent;
  }

  /**
   * The TLS contexts, made once and shared by every connection: with a private CA each context holds
   * a store of Node's ~140 root certificates plus that CA, which `ca` given per connection would
   * parse again for each one. Undefined where Node's default (shared) context serves.
   */
  private tlsContexts(): { origin?: SecureContext; proxy?: SecureContext } {
    if (!this.contexts) {
      const ca = trustedCas(this.tls);
      const clientCert = this.tls.cert && this.tls.key ? { cert: this.tls.cert, key: this.tls.key } : undefined;
      const origin = ca || clientCert ? createSecureContext({ ...(ca ? { ca } : {}), ...clientCert }) : undefined;
      this.contexts = { ...(origin ? { origin } : {}), ...(ca ? { proxy: createSecureContext({ ca }) } : {}) };
    }
    return this.contexts;
  }

  private originTls(): { secureContext?: SecureContext } {
    const { origin } = this.tlsContexts();
    return origin ? { secureContext: origin } : {};
  }

  /** Starts a request to `url` on the right pool: direct, through a proxy, or tunnelled. */
  open(url: URL, method: string, headers: Record<string, string>, signal: AbortSignal | undefined): ClientRequest {
    const proxy = proxyFor(url);
    const common = { method, headers, ...(signal ? { signal } : {}) };
    if (!proxy) {
      if (url.protocol === 'https:') return httpsRequest(url, { ...common, agent: this.agent('https', () => new HttpsAgent({ ...pool(), ...this.originTls() })) });
      return httpRequest(url, { ...common, agent: this.agent('http', () => new HttpAgent(pool())) });
    }
    if (url.protocol === 'https:') {
      const agent = this.agent(`tunnel ${proxy.href}`, () => new TunnelAgent(proxy, this.tlsContexts().proxy, this.userAgent, { ...pool(), ...this.originTls() }));
      return httpsRequest(url, { ...common, agent });
    }
    // A plain-http coordinator through a proxy: the request in absolute form, as Go and curl send it
    // (a proxy may allow CONNECT to port 443 only).
    const auth = proxyAuthorization(proxy);
    const target = { ...common, host: hostOf(proxy), port: portOf(proxy), path: url.href, headers: { ...headers, host: url.host, ...(auth ? { 'proxy-authorization': auth } : {}) } };
    if (proxy.protocol === 'https:') {
      const proxyContext = this.tlsContexts().proxy;
      return httpsRequest({ ...target, agent: this.agent(`via ${proxy.href}`, () => new HttpsAgent({ ...pool(), ...(proxyContext ? { secureContext: proxyContext } : {}) })) });
    }
    return httpRequest({ ...target, agent: this.agent(`via ${proxy.href}`, () => new HttpAgent(pool())) });
  }

  /** Ends every pooled connection. */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private agent<T extends HttpAgent>(key: string, make: () => T): T {
    let agent = this.agents.get(key);
    if (!agent) {
      agent = make();
      this.agents.set(key, agent);
    }
    return agent as T;
  }
}

function pool(): { keepAlive: true; timeout: number; scheduling: 'lifo' } {
  // `timeout` closes a pooled connection after it has been idle that long.
  return { keepAlive: true, timeout: IDLE_MS, scheduling: 'lifo' };
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: URL;
  headers?: Record<string, string>;
  body?: string | Uint8Array | AsyncIterable<Uint8Array> | NodeJS.ReadableStream;
  signal?: AbortSignal;
  /** Time allowed from the end of the request until the response headers (covers a long poll). */
  headersTimeoutMs?: number;
  /** Time the connection may sit without progress while the request is sent or the body is read. */
  bodyTimeoutMs?: number;
}

export interface HttpResponse {
  /** HTTP status, or -1 for a transport error (connection refused/reset, timeout, TLS). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The response body stream; the caller must consume it or `drain` it. Absent on transport errors. */
  body?: IncomingMessage;
  /** The transport error, when status is -1. */
  error?: Error;
}

/** A transport error with a code, as Node's own carry. */
function transportError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Sends a request. Rejects only when `signal` aborts; every other failure is status -1. */
export async function send(transport: Transport, req: HttpRequest): Promise<HttpResponse> {
  try {
    const response = await exchange(transport, req);
    return { status: response.statusCode ?? TRANSPORT_ERROR, headers: response.headers, body: response };
  } catch (error) {
    if (req.signal?.aborted) throw req.signal.reason;
    return { status: TRANSPORT_ERROR, headers: {}, error: error as Error };
  }
}

function exchange(transport: Transport, req: HttpRequest): Promise<IncomingMessage> {
  const headersMs = req.headersTimeoutMs ?? 60_000;
  const idleMs = req.bodyTimeoutMs ?? 60_000;
  const headers = { ...req.headers };
  const body = req.body;
  if (typeof body === 'string' || body instanceof Uint8Array) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise<IncomingMessage>((resolve, reject) => {
    let request: ClientRequest;
    try {
      request = transport.open(req.url, req.method, headers, req.signal);
    } catch (error) {
      reject(error as Error);
      return;
    }
    let headersTimer: NodeJS.Timeout | undefined;
    let idleError = transportError('ETIMEDOUT', `no progress sending the request for ${idleMs / 1000} s`);
    // The connection's idle timer runs while the request is sent and while the body is read, not
    // while the server holds a long poll (that is the headers deadline).
    request.setTimeout(idleMs);
    request.on('timeout', () => request.destroy(idleError));
    request.once('finish', () => {
      request.setTimeout(0);
      headersTimer = setTimeout(() => request.destroy(transportError('ETIMEDOUT', `no response headers within ${headersMs / 1000} s`)), headersMs);
    });
    request.once('error', (error) => {
      clearTimeout(headersTimer);
      reject(error);
    });
    request.once('response', (response) => {
      clearTimeout(headersTimer);
      idleError = transportError('ETIMEDOUT', `no response data for ${idleMs / 1000} s`);
      request.setTimeout(idleMs);
      // A body cut off by a reset is an error on the body; `request`'s own error has no listener then.
      request.removeAllListeners('error');
      request.on('error', (error) => response.destroy(error));
      response.once('end', () => request.setTimeout(0));
      resolve(response);
    });
    if (body === undefined) request.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) request.end(body);
    else {
      const source = body instanceof Readable ? body : Readable.from(body as AsyncIterable<Uint8Array>);
      // pipeline, not pipe: a request that fails mid-upload also closes the source (an open file).
      // Its error reaches the caller through `request`.
      pipeline(source, request, () => undefined);
    }
  });
}

/** Reads a header as a single string. */
export function header(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Discards a response body so the connection returns to the pool (a long one drops the connection). */
export async function drain(response: HttpResponse): Promise<void> {
  const body = response.body;
  if (!body || body.readableEnded || body.destroyed) return;
  let seen = 0;
  await new Promise<void>((resolve) => {
    body.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > MAX_DRAIN_BYTES) body.destroy();
    });
    body.once('end', resolve);
    body.once('close', resolve);
    body.once('error', () => resolve());
  });
}

/** Reads a response body as UTF-8 text; rejects when it is cut off or longer than 32 MiB. */
export async function readText(response: HttpResponse): Promise<string> {
  const body = response.body;
  if (!body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_TEXT_BYTES) {
      body.destroy();
      throw new Error(`the response body is longer than ${MAX_TEXT_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(chunk);
  }
  // A connection closed before the announced length ends the body without an error in some cases.
  if (!body.complete) throw new Error('the response body was cut off');
  return Buffer.concat(chunks).toString('utf8');
}
