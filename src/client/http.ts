/**
 * The transport under the runner API client: one undici dispatcher per coordinator (keep-alive
 * pool, custom CA, proxies from the environment) and a request helper that never throws for HTTP or
 * network failures — it returns status -1 for those, so callers classify every outcome in one place.
 * Only an abort of the caller's own signal rejects.
 */
import { Agent, EnvHttpProxyAgent, request, type Dispatcher } from 'undici';
import { TRANSPORT_ERROR } from './outcome.js';
import { trustedCas, type TlsMaterial } from './tls.js';

export interface TransportOptions {
  /** The runner's checked TLS files (`readTlsMaterial`): private CA, client certificate and key. */
  tls?: TlsMaterial;
  /** Replaces the dispatcher entirely (tests use undici's MockAgent). */
  dispatcher?: Dispatcher;
}

/**
 * Creates the dispatcher for one coordinator. Proxies come from HTTP_PROXY/HTTPS_PROXY/NO_PROXY
 * (either case). The CA and client certificate apply to the coordinator's TLS session whether it is
 * direct or tunnelled through a proxy's CONNECT (`requestTls`); an https proxy itself is checked
 * against the same trusted list.
 */
export function createDispatcher(options: TransportOptions = {}): Dispatcher {
  if (options.dispatcher) return options.dispatcher;
  const tls = options.tls ?? {};
  const ca = trustedCas(tls);
  const origin = {
    timeout: 30_000,
    ...(ca ? { ca } : {}),
    ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
  };
  const env = process.env;
  const proxied = Boolean(env.HTTP_PROXY || env.http_proxy || env.HTTPS_PROXY || env.https_proxy);
  if (!proxied) return new Agent({ keepAliveTimeout: 30_000, connect: origin });
  // EnvHttpProxyAgent hands `connect` to its direct (NO_PROXY) agent only; a ProxyAgent takes the
  // origin's TLS options from `requestTls` and the proxy's from `proxyTls`.
  return new EnvHttpProxyAgent({
    keepAliveTimeout: 30_000,
    connect: origin,
    requestTls: origin,
    proxyTls: { timeout: 30_000, ...(ca ? { ca } : {}) },
  });
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: URL;
  headers?: Record<string, string>;
  body?: string | Uint8Array | AsyncIterable<Uint8Array> | NodeJS.ReadableStream;
  signal?: AbortSignal;
  /** Time allowed until the response headers arrive (covers a long-polling server). */
  headersTimeoutMs?: number;
  /** Time allowed between body chunks. */
  bodyTimeoutMs?: number;
}

export interface HttpResponse {
  /** HTTP status, or -1 for a transport error (connection refused/reset, timeout, TLS). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The response body stream; the caller must consume or dump it. Absent on transport errors. */
  body?: Dispatcher.ResponseData['body'];
  /** The transport error, when status is -1. */
  error?: Error;
}

/** Sends a request. Rejects only when `signal` aborts; every other failure is status -1. */
export async function send(dispatcher: Dispatcher, req: HttpRequest): Promise<HttpResponse> {
  try {
    const response = await request(req.url, {
      dispatcher,
      method: req.method,
      headers: req.headers,
      body: req.body as Dispatcher.DispatchOptions['body'],
      signal: req.signal,
      headersTimeout: req.headersTimeoutMs ?? 60_000,
      bodyTimeout: req.bodyTimeoutMs ?? 60_000,
    });
    return { status: response.statusCode, headers: response.headers, body: response.body };
  } catch (error) {
    if (req.signal?.aborted) throw req.signal.reason;
    return { status: TRANSPORT_ERROR, headers: {}, error: error as Error };
  }
}

/** Reads a header as a single string. */
export function header(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Discards a response body so the connection returns to the pool. */
export async function drain(response: HttpResponse): Promise<void> {
  await response.body?.dump().catch(() => undefined);
}
