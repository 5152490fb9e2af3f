/**
 * Timers for delays that come from outside: config, flags, the coordinator. Node's timers take at most
 * 2^31-1 ms (~24.8 days); a longer delay is silently turned into 1 ms, so a "never cancel" shutdown
 * timeout of 30 days would cancel at once and a huge check_interval would poll continuously. These chain
 * timers instead, so 30 days means 30 days. A non-finite delay never fires.
 */

/** The longest delay one Node timer can hold. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimer {
  clear(): void;
}

/**
 * Calls `fn` after `ms` (any length), like setTimeout. `unref` timers do not keep the process alive.
 * NaN or a negative delay fires at the next tick, as setTimeout does with them.
 */
export function setLongTimeout(fn: () => void, ms: number, options: { unref?: boolean } = {}): LongTimer {
  let timer: NodeJS.Timeout | undefined;
  let cleared = false;
  const due = Date.now() + (Number.isNaN(ms) ? 0 : Math.max(0, ms));
  const arm = (): void => {
    if (cleared || due === Infinity) return;
    const left = due - Date.now();
    if (left > MAX_TIMER_MS) timer = setTimeout(arm, MAX_TIMER_MS);
    else timer = setTimeout(fn, Math.max(0, left));
    if (options.unref) timer.unref();
  };
  arm();
  return {
    clear(): void {
      cleared = true;
      clearTimeout(timer);
    },
  };
}

/** Resolves after `ms` (any length), or rejects with the signal's reason as soon as it aborts. */
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
