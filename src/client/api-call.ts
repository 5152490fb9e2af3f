/**
 * What every endpoint call of the runner API shares: where and how it connects (`ApiContext`), the
 * result it returns (`ApiResult`: status and classification from `retryable.ts`), and tolerant body
 * readers. A body that is cut off or not JSON is an answer to classify, never an exception: methods
 * reject only when the caller's signal aborts.
 */
import { classify, retryAfterMs, type Endpoint, type Outcome } from './retryable.js';
import type { TlsMaterial } from './tls.js';
import { explainTransportError } from './tls-hints.js';
import { header, readText, type HttpResponse, type Transport } from './transport.js';

export interface ApiResult {
  status: number;
  outcome: Outcome;
  /** The transport error behind status -1. */
  error?: Error;
  /** How long the server asked to be left alone (`Retry-After`, or `RateLimit-ResetTime`), in ms. */
  retryAfterMs?: number;
}

/** The connection an endpoint call goes through (one per `RunnerApiClient`). */
export interface ApiContext {
  readonly transport: Transport;
  /** `<url>/ci/api/v1/` or `<url>/api/v4/`; endpoint paths are resolved against it. */
  readonly baseUrl: URL;
  readonly tls: TlsMaterial;
  /** Deadline for response headers of ordinary calls. */
  readonly requestTimeoutMs: number;
}

/** The status, its classification for `endpoint`, and a transport error explained for the user. */
export function apiResult(api: Pick<ApiContext, 'baseUrl' | 'tls'>, endpoint: Endpoint, response: HttpResponse): ApiResult {
  // GitLab's rate limiter also says when its window resets (an HTTP date), which GitLab Runner honours.
  const retryAfter = retryAfterMs(header(response.headers, 'retry-after')) ?? retryAfterMs(header(response.headers, 'ratelimit-resettime'));
  return {
    status: response.status,
    outcome: classify(endpoint, response.status),
    ...(response.error ? { error: explainTransportError(response.error, api.baseUrl, api.tls) } : {}),
    ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
  };
}

/** The body as text, or undefined when it could not be read to its end. */
export async function readTextIfWhole(response: HttpResponse): Promise<string | undefined> {
  try {
    return await readText(response);
  } catch {
    return undefined;
  }
}

/** The body parsed as JSON, or undefined when it is empty, cut off or not JSON. */
export async function decodeJson(response: HttpResponse): Promise<unknown> {
  const text = await readTextIfWhole(response);
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
