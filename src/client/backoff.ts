/**
 * Exponential backoff with full jitter, and an abortable sleep. Every retry loop in the runner uses
 * these so that a fleet of runners never retries in lockstep.
 */
import { setLongTimeout } from '../timers.js';

export interface BackoffOptions {
  /** First delay before jitter, in ms. */
  baseMs: number;
  /** Upper bound of any delay, in ms. */
  maxMs: number;
  /** Random source in [0, 1), replaceable in tests. */
  random?: () => number;
}

/** Delay before retry number `attempt` (0-based): uniform in [d/2, d] with d = min(max, base·2^attempt). */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const random = options.random ?? Math.random;
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Resolves after `ms` (any length, see timers.ts), or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      timer.clear();
      reject(signal?.reason);
    };
    const timer = setLongTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
