/**
 * The Kubernetes API as the executor uses it, on `@kubernetes/client-node`: the typed clients, every
 * call abortable, and failures turned into {@link KubernetesApiError} carrying the API's own status
 * message (`pods "x" is forbidden: User "y" cannot create resource "pods" …`), which is what a user
 * needs to see. A request that fails on the way (a refused or reset connection, a timeout) is tried
 * again as GitLab Runner tries it: `retry_limit` tries in all (per error text, `retry_limits`), waits
 * growing from 500 ms to `retry_backoff_max`.
 */
import { ApiException, AuthorizationV1Api, CoreV1Api, Observable, PolicyV1Api, VersionApi, type ConfigurationOptions, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import { CiRunnerError } from '../../util/errors.js';
import { backoffDelay } from '../../client/retry.js';
import { sleep } from '../../util/timers.js';
import type { Connection } from './connection.js';

/** A call to the API failed; `status` is the HTTP status (undefined when no answer came). */
export class KubernetesApiError extends CiRunnerError {
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super('KUBERNETES_API', message, options);
  }
}

/** `[runners.kubernetes]`'s retry keys. */
export interface ApiRetry {
  /** Tries in all of a request that failed on the way. */
  limit: number;
  /** The longest wait between tries, ms. */
  backoffMaxMs: number;
  /** Tries in all of a request whose error contains the key. */
  limits: Readonly<Record<string, number>>;
}

/** GitLab Runner's defaults (retry_limit 5, retry_backoff_max 2000 ms). */
export const DEFAULT_API_RETRY: ApiRetry = { limit: 5, backoffMaxMs: 2000, limits: {} };

export class KubeApi {
  readonly core: CoreV1Api;
  readonly authorization: AuthorizationV1Api;
  readonly version: VersionApi;
  readonly policy: PolicyV1Api;

  constructor(
    readonly connection: Connection,
    private readonly retries: ApiRetry = DEFAULT_API_RETRY,
  ) {
    this.core = connection.config.makeApiClient(CoreV1Api);
    this.authorization = connection.config.makeApiClient(AuthorizationV1Api);
    this.version = connection.config.makeApiClient(VersionApi);
    this.policy = connection.config.makeApiClient(PolicyV1Api);
  }

  /**
   * Runs `fn` with per-call options that abort the request with `signal`; maps failures to
   * {@link KubernetesApiError} saying what was being done (`creating pod x`). An answer that asks to
   * be tried again (429 or 5xx with `Retry-After`, as the apiserver sends while a fresh namespace's
   * service account has no token yet) is retried after the wait it names, as client-go does; a
   * request that failed on the way, per the retry keys.
   */
  async call<T>(what: string, signal: AbortSignal | undefined, fn: (options: ConfigurationOptions | undefined) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      signal?.throwIfAborted();
      try {
        return await fn(signal ? signalOptions(signal) : undefined);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const retryAfter = retryAfterMs(error);
        const tries = retryAfter === undefined ? triesFor(error, this.retries) : RETRY_AFTER_TRIES;
        if (attempt >= tries) throw apiError(what, error, this.connection.server);
        await sleep(retryAfter ?? backoffDelay(attempt - 1, { baseMs: RETRY_BACKOFF_MIN_MS, maxMs: this.retries.backoffMaxMs }), signal);
      }
    }
  }
}

/** Answers that keep asking to be retried: 10 tries in all, each wait the one asked for (at most 10 s). */
const RETRY_AFTER_MAX_S = 10;
const RETRY_AFTER_TRIES = 10;
const RETRY_BACKOFF_MIN_MS = 500;

/** Failures on the way to the API, by the words of their errors (GitLab Runner's list, and Node's codes). */
const NETWORK_ERRORS = [
  'error dialing backend', 'TLS handshake timeout', 'read: connection timed out', 'connect: connection timed out', 'Timeout occurred',
  'etcdserver: request timed out', 'http2: client connection lost', 'connection refused', 'tls: internal error', 'unexpected EOF',
  'connection reset by peer', 'broken pipe', 'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'socket hang up', 'other side closed',
];

/** How many tries in all a request that failed with `error` gets: 1 unless its words are retried. */
function triesFor(error: unknown, retries: ApiRetry): number {
  const text = errorText(error);
  for (const [words, tries] of Object.entries(retries.limits)) if (text.includes(words)) return tries;
  return NETWORK_ERRORS.some((words) => text.includes(words)) ? retries.limit : 1;
}

/** An error's message, its cause's, its code and the API's status message, for matching words. */
function errorText(error: unknown): string {
  const e = error as { message?: string; code?: unknown; cause?: { message?: string; code?: string }; body?: unknown };
  return [e.message, String(e.code ?? ''), e.cause?.message, e.cause?.code, error instanceof ApiException ? statusMessage(e.body) : undefined].filter(Boolean).join(' ');
}

/** The wait a 429 or 5xx answer asks for in `Retry-After` (whole seconds, 1 to 10), else undefined. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const status = error.code as number;
  if (status !== 429 && status < 500) return undefined;
  const headers = (error.headers ?? {}) as Record<string, string | undefined>;
  const header = Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  const seconds = Number(header);
  if (header === undefined || header.trim() === '' || !Number.isFinite(seconds)) return undefined;
  return Math.min(Math.max(Math.ceil(seconds), 1), RETRY_AFTER_MAX_S) * 1000;
}

/** The options that make one request abortable (the middleware runs per call, before the fetch). */
function signalOptions(signal: AbortSignal): ConfigurationOptions {
  const middleware = {
    pre: (context: RequestContext) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** `creating pod x: <the API's message>` or `creating pod x: cannot reach https://…: <cause>`. */
export function apiError(what: string, error: unknown, server: string): KubernetesApiError {
  if (error instanceof KubernetesApiError) return error;
  if (error instanceof ApiException) {
    const status = error.code;
    return new KubernetesApiError(`${what}: ${statusMessage(error.body) ?? `HTTP ${status}`}`, status, { cause: error });
  }
  const cause = error as Error & { cause?: { code?: string; message?: string }; code?: string };
  // The WebSocket library's words for an upgrade the API refused.
  const refused = /Unexpected server response: (\d+)/.exec(cause.message ?? '');
  if (refused) return new KubernetesApiError(`${what}: the API answered HTTP ${refused[1]}`, Number(refused[1]), { cause: error });
  const detail = cause.cause?.message ?? cause.message;
  return new KubernetesApiError(`${what}: cannot reach the Kubernetes API at ${server}: ${detail}`, undefined, { cause: error });
}

/** The `message` of a Status body (a string of JSON, or parsed). */
function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return body.trim() ? body.trim().slice(0, 500) : undefined;
    }
  }
  const message = value && typeof value === 'object' ? (value as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : undefined;
}

/** True for a 404 (the object is gone already). */
export function isNotFound(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.status === 404;
}
