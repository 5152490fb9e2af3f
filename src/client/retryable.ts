/**
 * The one table of what is done, retried, or final (docs/protocol-v1.md §4, §12; docs/protocol-v4.md for
 * the v4 endpoints, named `…V4` where v1 has one of the same purpose): per endpoint, which HTTP
 * statuses succeed and which will not change on a retry; which transport errors are worth another
 * try; and how long a server asks to be left alone (`Retry-After`). Every retry in the runner (poll
 * loops, trace sender, final update, artifact transfers) decides from here, through `retry.ts`.
 * Transport errors are status -1, as in the legacy client.
 */

export type Endpoint =
  | 'registerRunner'
  | 'deleteRunner'
  | 'verifyRunner'
  | 'requestBuild'
  | 'updateBuild'
  | 'patchTrace'
  | 'uploadArtifacts'
  | 'downloadArtifacts'
  | 'registerRunnerV4'
  | 'deleteRunnerV4'
  | 'deleteManagerV4'
  | 'verifyRunnerV4'
  | 'resetTokenV4'
  | 'requestJobV4'
  | 'updateJobV4'
  | 'patchTraceV4';

/** `ok`: success; `retry`: transient, try again with backoff; `final`: stop, it will not get better. */
export type Outcome = 'ok' | 'retry' | 'final';

export const TRANSPORT_ERROR = -1;

const successStatus: Record<Endpoint, readonly number[]> = {
  registerRunner: [201],
  deleteRunner: [200],
  verifyRunner: [404],
  requestBuild: [201, 204, 404],
  updateBuild: [200],
  patchTrace: [202],
  uploadArtifacts: [201],
  downloadArtifacts: [200],
  registerRunnerV4: [201],
  deleteRunnerV4: [204],
  deleteManagerV4: [204],
  verifyRunnerV4: [200],
  resetTokenV4: [201],
  requestJobV4: [201, 204],
  // 202 is "accepted, not complete": the same update is repeated after the server's interval.
  updateJobV4: [200],
  patchTraceV4: [202],
};

/**
 * Statuses that will not change on a retry, per endpoint. 401 is treated like 403 (§12 item 1).
 * Every other status (5xx, 408, 409, 429, a proxy's 502, an unknown code) is retried: the legacy
 * client retries them all, and a coordinator behind a load balancer produces any of them briefly.
 */
const finalStatus: Record<Endpoint, readonly number[]> = {
  registerRunner: [400, 401, 403, 404, 422],
  deleteRunner: [400, 401, 403],
  verifyRunner: [401, 403],
  requestBuild: [401, 403],
  updateBuild: [401, 403, 404],
  patchTrace: [401, 403, 404, 416],
  uploadArtifacts: [400, 401, 403, 404, 405, 413],
  downloadArtifacts: [401, 403, 404],
  // 410: registration tokens are disabled on the instance (GitLab 17+): create the runner there instead.
  registerRunnerV4: [400, 401, 403, 404, 410, 422],
  deleteRunnerV4: [400, 401, 403],
  deleteManagerV4: [400, 401, 403, 404],
  verifyRunnerV4: [401, 403],
  resetTokenV4: [400, 401, 403, 422],
  // 409 (lost a race), 422 and 429 are retried with the server's Retry-After, never a storm.
  requestJobV4: [401, 403],
  // 400 is a state the server does not take; retrying the same body cannot change it.
  updateJobV4: [400, 401, 403, 404],
  patchTraceV4: [401, 403, 404, 416],
};

/**
 * Transport errors (status -1) that no retry can mend: the request cannot even be built — a proxy
 * URL in the environment that is not one, an option undici refuses (a bug). A loop with an end
 * (final update, failure report, artifact transfer) stops at once on these; the daemon's poll loops
 * keep backing off, as for any failure. Every other transport error is retried: refused, reset and
 * timed-out connections, DNS failures, cut-off bodies, a proxy's refusal, and TLS failures too (a
 * coordinator's certificate is fixed or renewed while a runner keeps trying; tls-hints.ts says which
 * setting helps).
 */
const unmendableTransportCodes: ReadonlySet<string> = new Set(['PROXY_URL_INVALID', 'ERR_INVALID_URL', 'UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);

/** Classifies a status (or {@link TRANSPORT_ERROR}, always `retry`) for an endpoint. `final` is always an HTTP answer. */
export function classify(endpoint: Endpoint, status: number): Outcome {
  if (status === TRANSPORT_ERROR) return 'retry';
  if (successStatus[endpoint].includes(status)) return 'ok';
  if (finalStatus[endpoint].includes(status)) return 'final';
  return 'retry';
}

/** Whether another attempt may go differently: a `retry` outcome whose transport error (if any) can mend. */
export function worthRetrying(result: { outcome: Outcome; status: number; error?: unknown }): boolean {
  if (result.outcome !== 'retry') return false;
  return result.status !== TRANSPORT_ERROR || !unmendableTransportCodes.has(errorCode(result.error));
}

/** The `code` of an error, or of the first error in its `cause` chain that has one. */
export function errorCode(error: unknown): string {
  for (let e = error, depth = 0; e instanceof Object && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
  }
  return '';
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in milliseconds from `now`: delta-seconds or an HTTP date.
 * Undefined when absent or unreadable; a date in the past is 0.
 */
export function retryAfterMs(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, at - now);
}
