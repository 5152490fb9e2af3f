/**
 * undici's transport errors in words a runner's operator can act on. The `code` stays undici's or
 * Node's (`UND_ERR_HEADERS_TIMEOUT`, `ECONNREFUSED`, `ERR_TLS_CERT_ALTNAME_INVALID`) so the retry
 * table and the TLS hints branch on it; only the message changes, and the original is the `cause`.
 * A proxy's refusal, which undici reports only in a message, gets a code of its own.
 */
import { CiRunnerError } from '../util/errors.js';

/** A transport failure explained; `cause` is undici's or Node's error. */
export class TransportError extends CiRunnerError {}

export interface Timeouts {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

/** Codes that, with a proxy in the way, can only come from the connection to the proxy itself. */
const REACH_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** `error` from a request to `url` (through `proxy`, if any) as the error callers report. */
export function describeTransportError(error: unknown, url: URL, timeouts: Timeouts, proxy?: URL): Error {
  if (!(error instanceof Error)) return new TransportError('ETRANSPORT', String(error));
  if (error instanceof CiRunnerError) return error;
  const code = String((error as { code?: unknown }).code ?? '');
  const seconds = (ms: number): string => `${ms / 1000} s`;
  const because = (text: string, newCode = code): TransportError => new TransportError(newCode, text, { cause: error });
  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
      return because(`no response headers within ${seconds(timeouts.headersTimeoutMs)} from ${url.host}`);
    case 'UND_ERR_BODY_TIMEOUT':
      return because(`no response data for ${seconds(timeouts.bodyTimeoutMs)} from ${url.host}`);
    case 'UND_ERR_SOCKET':
      return because(`the connection to ${url.host}${proxy ? ` (through the proxy ${proxy.host})` : ''} closed before the answer was complete (${error.message})`);
  }
  if (proxy) return proxyError(error, code, url, proxy, because);
  return error;
}

function proxyError(error: Error, code: string, url: URL, proxy: URL, because: (text: string, code?: string) => TransportError): Error {
  const target = `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
  // undici reports a refused CONNECT only as text: "Proxy response (407) !== 200 when HTTP Tunneling".
  const refused = /Proxy response \((\d+)\)/.exec(error.message);
  if (refused) {
    const status = Number(refused[1]);
    return because(`the proxy ${proxy.host} refused the tunnel to ${target}: HTTP ${status}${status === 407 ? AUTH_HINT : ''}`, 'PROXY_TUNNEL_REFUSED');
  }
  if (/Proxy Authentication Required/i.test(error.message)) {
    return because(`the proxy ${proxy.host} refused the request to ${url.host}: HTTP 407${AUTH_HINT}`, 'PROXY_AUTH_REQUIRED');
  }
  if (code === 'UND_ERR_PRX_TLS') {
    const cause = error.cause instanceof Error ? error.cause.message : error.message;
    return because(`TLS to the proxy ${proxy.host} failed: ${cause}`, 'PROXY_TLS_FAILED');
  }
  if (REACH_CODES.has(code)) return because(`cannot reach the proxy ${proxy.host} (from HTTPS_PROXY/HTTP_PROXY): ${error.message}`);
  return error;
}

const AUTH_HINT = ' (proxy authentication required: give user and password in the proxy URL)';
