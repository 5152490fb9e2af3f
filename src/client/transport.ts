/**
 * The transport under the runner API client, on undici: per coordinator one keep-alive `Agent`
 * (direct) and one `ProxyAgent` per proxy in use, made on first use and reused by every request.
 * The runner's CA (added to the system's roots) and client certificate go into one TLS context
 * shared by all connections, tunnelled or not. Which dispatcher a request takes is `proxyFor`'s
 * choice (GitLab Runner's reading of the environment, see proxy-env.ts).
 *
 * `send` never throws for HTTP or network failures: it returns status -1 with the error explained
 * (transport-errors.ts), so callers classify every outcome in one place (retryable.ts). Only an
 * abort of the caller's own signal rejects.
 */
import { isIP } from 'node:net';
import { pipeline, Readable, Transform } from 'node:stream';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { buildConnector, Dispatcher } from 'undici';
import { TRANSPORT_ERROR } from './retryable.js';
import { proxyAuthorization, proxyFor } from './proxy-env.js';
import { trustedCas, type TlsMaterial } from './tls.js';
import { describeTransportError, TransportError } from './transport-errors.js';
import { Agent, Pool, ProxyAgent } from './undici.js';

export interface TransportOptions {
  /** The runner's checked TLS files (`readTlsMaterial`): private CA, client certificate and key. */
  tls?: TlsMaterial;
  /** Sent on a proxy's CONNECT too, as GitLab Runner does. */
  userAgent?: string;
  /** Sends every request here instead (tests: undici's `MockAgent`). Not closed by `close`. */
  dispatcher?: Dispatcher;
  /** A connection is not reused past this age (GitLab Runner's `connection_max_age`); default: no limit. */
  connectionMaxAgeMs?: number;
}

/** How long an idle pooled connection is kept (a server's shorter `Keep-Alive: timeout` wins). */
const IDLE_MS = 30_000;
/** How long a TCP connect and TLS handshake (or a proxy's CONNECT) may take. */
const CONNECT_MS = 30_000;
/** Most of a body read as text (a build payload is far smaller). */
const MAX_TEXT_BYTES = 32 * 1024 * 1024;
/** Most of an unwanted body read to keep its connection; past it the connection is dropped. */
const MAX_DRAIN_BYTES = 128 * 1024;

/** One coordinator's dispatchers. `close` ends their connections. */
export class Transport {
  private readonly tls: TlsMaterial;
  private readonly userAgent: string | undefined;
  private readonly injected: Dispatcher | undefined;
  private direct: Agent | undefined;
  private readonly proxied = new Map<string, ProxyAgent>();
  private contexts: { origin?: SecureContext; proxy?: SecureContext } | undefined;
  private readonly maxAgeMs: number | undefined;

  constructor(options: TransportOptions = {}) {
    this.maxAgeMs = options.connectionMaxAgeMs;
    this.tls = options.tls ?? {};
    this.userAgent = options.userAgent;
    this.injected = options.dispatcher;
  }

  /** The dispatcher for a request to `url`: direct, or through the proxy the environment names for it. */
  route(url: URL): { dispatcher: Dispatcher; proxy?: URL } {
    if (this.injected) return { dispatcher: this.injected };
    const proxy = proxyFor(url);
    if (!proxy) return { dispatcher: (this.direct ??= new Agent({ ...pool(this.maxAgeMs), connect: { timeout: CONNECT_MS, ...this.originTls() } })) };
    let agent = this.proxied.get(proxy.href);
    if (!agent) {
      const auth = proxyAuthorization(proxy);
      const proxyContext = this.tlsContexts().proxy;
      agent = new ProxyAgent({
        ...pool(this.maxAgeMs),
        uri: proxy.href,
        ...(auth ? { token: auth } : {}),
        headers: this.userAgent ? { 'user-agent': this.userAgent } : {},
        // A plain-http coordinator through an http proxy: requests in absolute form, as Go and curl
        // send them (a proxy may allow CONNECT to port 443 only). https always tunnels.
        proxyTunnel: false,
        requestTls: { timeout: CONNECT_MS, ...this.originTls() },
        proxyTls: { timeout: CONNECT_MS, ...(proxyContext ? { secureContext: proxyContext } : {}) },
        clientFactory: proxyPool,
      });
      this.proxied.set(proxy.href, agent);
    }
    return { dispatcher: agent, proxy };
  }

  /** Ends every pooled connection at once (requests in flight fail). */
  async close(): Promise<void> {
    const all: Dispatcher[] = [...(this.direct ? [this.direct] : []), ...this.proxied.values()];
    this.direct = undefined;
    this.proxied.clear();
    await Promise.all(all.map((d) => d.destroy().catch(() => undefined)));
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
}

/**
 * The pool of connections to the proxy itself, as undici makes it, except that an https proxy
 * addressed by IP gets no TLS server name: undici passes the IP, which Node refuses with a warning
 * (DEP0123: RFC 6066 allows host names only) and will ignore.
 */
function proxyPool(origin: URL, options: object): Dispatcher {
  const { connect } = options as { connect: buildConnector.connector };
  return new Pool(origin, {
    ...options,
    connect: (target, callback) => {
      const { servername, ...rest } = target;
      connect(servername !== undefined && isIP(servername) !== 0 ? rest : target, callback);
    },
  });
}

/** Pool options: idle connections kept IDLE_MS; none older than `maxAgeMs` handed a request (undici's `clientTtl`). */
function pool(maxAgeMs?: number): { keepAliveTimeout: number; keepAliveMaxTimeout: number; clientTtl?: number } {
  return { keepAliveTimeout: IDLE_MS, keepAliveMaxTimeout: IDLE_MS, ...(maxAgeMs !== undefined && maxAgeMs > 0 ? { clientTtl: maxAgeMs } : {}) };
}

export interface HttpRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: URL;
  headers?: Record<string, string>;
  body?: string | Uint8Array | AsyncIterable<Uint8Array> | Readable;
  signal?: AbortSignal | undefined;
  /** Time allowed from the end of the request until the response headers (covers a long poll). */
  headersTimeoutMs?: number;
  /** Time the request may go without progress while its body is sent, or the response body is read. */
  bodyTimeoutMs?: number;
  /** Time the whole request may take until the response headers (an upload's `upload_timeout`); none by default. */
  deadlineMs?: number;
}

export interface HttpResponse {
  /** HTTP status, or -1 for a transport error (connection refused/reset, timeout, TLS, proxy). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The response body stream; the caller must consume it or `drain` it. Absent on transport errors. */
  body?: Dispatcher.ResponseData['body'];
  /** The transport error, when status is -1. */
  error?: Error;
}

/** Sends a request. Rejects only when `signal` aborts; every other failure is status -1. */
export async function send(transport: Transport, req: HttpRequest): Promise<HttpResponse> {
  const headersTimeoutMs = req.headersTimeoutMs ?? 60_000;
  const bodyTimeoutMs = req.bodyTimeoutMs ?? 60_000;
  let sending: ReturnType<typeof watchUpload> | undefined;
  let proxy: URL | undefined;
  try {
    const route = transport.route(req.url);
    proxy = route.proxy;
    // Our own limits abort through signals of their own: they end as status -1, the caller's as a rejection.
    const limits: AbortSignal[] = req.deadlineMs !== undefined ? [AbortSignal.timeout(req.deadlineMs)] : [];
    if (isStream(req.body)) {
      const stalled = new AbortController();
      sending = watchUpload(req.body, bodyTimeoutMs, stalled);
      limits.push(stalled.signal);
    }
    const all = [...(req.signal ? [req.signal] : []), ...limits];
    const signal = all.length > 1 ? AbortSignal.any(all) : all[0];
    const response = await route.dispatcher.request({
      origin: req.url.origin,
      path: `${req.url.pathname}${req.url.search}`,
      method: req.method,
      ...(req.headers ? { headers: req.headers } : {}),
      ...(req.body !== undefined ? { body: sending?.body ?? (req.body as string | Uint8Array) } : {}),
      ...(signal ? { signal } : {}),
      headersTimeout: headersTimeoutMs,
      bodyTimeout: bodyTimeoutMs,
    });
    // A server may answer before it has read the whole upload (a 413): once the answer is read, the
    // rest of the body is not needed, and its source (an open file) is closed.
    if (sending) {
      const unsent = sending.body;
      response.body.once('close', () => {
        if (!unsent.writableFinished) unsent.destroy();
      });
    }
    return { status: response.statusCode, headers: response.headers, body: response.body };
  } catch (error) {
    // Whatever failed, the body's source (an open file) is closed with it.
    sending?.body.destroy();
    if (req.signal?.aborted) throw req.signal.reason;
    const overDeadline = req.deadlineMs !== undefined && (error as Error).name === 'TimeoutError';
    const described = overDeadline ? new TransportError('REQUEST_DEADLINE', `${req.url.origin}: the request took longer than ${req.deadlineMs} ms`, { cause: error }) : describeTransportError(error, req.url, { headersTimeoutMs, bodyTimeoutMs }, proxy);
    return { status: TRANSPORT_ERROR, headers: {}, error: described };
  } finally {
    sending?.done();
  }
}

function isStream(body: HttpRequest['body']): body is AsyncIterable<Uint8Array> | Readable {
  return body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array);
}

/**
 * A streamed request body with a progress watchdog: undici has no deadline while it sends, so a
 * peer that stops reading an upload would hold it until the job's own timeout. `stalled` aborts the
 * request after `ms` without a chunk taken. The source is closed whatever ends the request (an open
 * file, for an artifact upload).
 */
function watchUpload(source: AsyncIterable<Uint8Array> | Readable, ms: number, stalled: AbortController): { body: Transform; done(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => stalled.abort(new TransportError('ETIMEDOUT', `no progress sending the request for ${ms / 1000} s`)), ms);
  };
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      arm();
      callback(null, chunk);
    },
  });
  arm();
  pipeline(source instanceof Readable ? source : Readable.from(source), body, () => clearTimeout(timer));
  return { body, done: () => clearTimeout(timer) };
}

/** Reads a header as a single string. */
export function header(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Discards a response body so the connection returns to the pool (a long one drops the connection). */
export async function drain(response: HttpResponse): Promise<void> {
  await response.body?.dump({ limit: MAX_DRAIN_BYTES }).catch(() => undefined);
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
  return Buffer.concat(chunks).toString('utf8');
}
