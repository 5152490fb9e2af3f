/**
 * The one retry helper: exponential backoff with jitter, the server's `Retry-After` honoured, an
 * `AbortSignal` that ends any wait. `retry` runs a bounded or unbounded loop of attempts (final
 * update, failure reports, artifact transfers, the trace sender's drain); `Backoff` is the same
 * schedule for loops that wait in their own way (poll loops, the live trace sender). What counts as
 * worth retrying is decided from the table in `retryable.ts`, by the caller's step.
 */
import { sleep as abortableSleep } from '../util/timers.js';

export interface RetryPolicy {
  /** First delay before jitter, in ms. */
  baseMs: number;
  /** Upper bound of a backoff delay, in ms. */
  maxMs: number;
  /** Tries in all, the first one included; absent: until the signal aborts. */
  attempts?: number;
  /** Longest `Retry-After` honoured, in ms (a longer one is cut to it). Default 10 minutes. */
  maxRetryAfterMs?: number;
  /** Random source in [0, 1), replaceable in tests. */
  random?: () => number;
}

const DEFAULT_MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * Delay before retry number `attempt` (0-based): uniform in [d/2, d] with d = min(max, base·2^attempt),
 * so a fleet of runners that failed together does not retry in lockstep.
 */
export function backoffDelay(attempt: number, policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>): number {
  const random = policy.random ?? Math.random;
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The wait after failure number `failures` (1-based): the backoff, or the server's `Retry-After` when longer. */
export function retryDelay(policy: RetryPolicy, failures: number, retryAfterMs?: number): number {
  const backoff = backoffDelay(Math.max(0, failures - 1), policy);
  if (retryAfterMs === undefined) return backoff;
  return Math.max(backoff, Math.min(retryAfterMs, policy.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS));
}

/** A failure streak on one schedule: each failure lengthens the next wait, a success resets it. */
export class Backoff {
  private count = 0;

  constructor(private readonly policy: RetryPolicy) {}

  /** Failures since the last success. */
  get failures(): number {
    return this.count;
  }

  /** Counts a failure and returns the wait before the next try. */
  failed(retryAfterMs?: number): number {
    this.count += 1;
    return retryDelay(this.policy, this.count, retryAfterMs);
  }

  succeeded(): void {
    this.count = 0;
  }
}

/** What one attempt came to: done (success, or an answer that retrying cannot change), or worth another try. */
export type Step<T, F> = { done: T } | { failed: F; retryAfterMs?: number | undefined };

export type RetryResult<T, F> = { ok: true; value: T; attempts: number } | { ok: false; failure: F; attempts: number };

export interface RetryOptions<F> {
  policy: RetryPolicy;
  /** Aborting ends the wait between attempts: `retry` rejects with the reason. */
  signal?: AbortSignal | undefined;
  /** Before each wait: the failure, the attempt that failed (1-based), the wait in ms. */
  onRetry?(failure: F, attempt: number, delayMs: number): void;
  /** The wait itself (tests record delays instead of waiting). */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Runs `step` (given its 1-based attempt number) until it is done or `policy.attempts` have failed,
 * waiting between attempts. Resolves with the value, or with the last failure when the attempts ran
 * out; rejects only with the signal's reason (or what `step` throws).
 */
export async function retry<T, F>(step: (attempt: number) => Promise<Step<T, F>>, options: RetryOptions<F>): Promise<RetryResult<T, F>> {
  const { policy, signal } = options;
  const backoff = new Backoff(policy);
  const wait = options.sleep ?? abortableSleep;
  const limit = policy.attempts ?? Number.POSITIVE_INFINITY;
  for (let attempt = 1; ; attempt += 1) {
    if (signal?.aborted) throw signal.reason;
    const result = await step(attempt);
    if ('done' in result) return { ok: true, value: result.done, attempts: attempt };
    if (attempt >= limit) return { ok: false, failure: result.failed, attempts: attempt };
    const delay = backoff.failed(result.retryAfterMs);
    options.onRetry?.(result.failed, attempt, delay);
    await wait(delay, signal);
  }
}
