/**
 * The Kubernetes API as the executor uses it, on `@kubernetes/client-node`: the typed clients, every
 * call abortable, and failures turned into {@link KubernetesApiError} carrying the API's own status
 * message (`pods "x" is forbidden: User "y" cannot create resource "pods" …`), which is what a user
 * needs to see.
 */
import { ApiException, AuthorizationV1Api, CoreV1Api, Observable, VersionApi, type ConfigurationOptions, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import { CiRunnerError } from '../../util/errors.js';
import { retry, type RetryPolicy, type Step } from '../../client/retry.js';
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

export class KubeApi {
  readonly core: CoreV1Api;
  readonly authorization: AuthorizationV1Api;
  readonly version: VersionApi;

  constructor(readonly connection: Connection) {
    this.core = connection.config.makeApiClient(CoreV1Api);
    this.authorization = connection.config.makeApiClient(AuthorizationV1Api);
    this.version = connection.config.makeApiClient(VersionApi);
  }

  /**
   * Runs `fn` with per-call options that abort the request with `signal`; maps failures to
   * {@link KubernetesApiError} saying what was being done (`creating pod x`). An answer that asks to
   * be tried again (429 or 5xx with `Retry-After`, as the apiserver sends while a fresh namespace's
   * service account has no token yet) is retried after the wait it names, as client-go does.
   */
  async call<T>(what: string, signal: AbortSignal | undefined, fn: (options: ConfigurationOptions | undefined) => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    const step = async (): Promise<Step<T, unknown>> => {
      try {
        return { done: await fn(signal ? signalOptions(signal) : undefined) };
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const retryAfter = retryAfterMs(error);
        if (retryAfter === undefined) throw apiError(what, error, this.connection.server);
        return { failed: error, retryAfterMs: retryAfter };
      }
    };
    const result = await retry(step, { policy: RETRY_POLICY, signal });
    if (result.ok) return result.value;
    throw apiError(what, result.failure, this.connection.server);
  }
}

/** Answers that keep asking to be retried: 10 tries in all, each wait the one asked for (at most 10 s). */
const RETRY_AFTER_MAX_S = 10;
const RETRY_POLICY: RetryPolicy = { baseMs: 200, maxMs: 1_000, attempts: 10, maxRetryAfterMs: RETRY_AFTER_MAX_S * 1000 };

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
