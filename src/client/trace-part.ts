/**
 * One trace part on the wire, the same exchange on both APIs (v1 E6, v4 V8) but for the path and the
 * headers each client names: the bytes as `text/plain` with their `Content-Range` and the job token,
 * the answer drained (its headers are all a trace part answers with).
 */
import { type ApiContext } from './api-call.js';
import { USER_AGENT } from './info.js';
import { drain, send, type HttpResponse } from './transport.js';

export async function sendTracePart(api: ApiContext, url: URL, headers: Record<string, string>, bytes: Uint8Array, signal?: AbortSignal): Promise<HttpResponse> {
  const response = await send(api.transport, {
    method: 'PATCH',
    url,
    headers: { 'content-type': 'text/plain', ...headers, 'user-agent': USER_AGENT },
    body: bytes,
    signal,
    headersTimeoutMs: api.requestTimeoutMs,
  });
  await drain(response);
  return response;
}
