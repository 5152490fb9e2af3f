/**
 * The poll loops' pauses: a timer that shutdown or a reload can end early, and a shared set of loops
 * waiting for a slot that `wakeAll` ends (a job finished, a poll released its reservation).
 */
import { setLongTimeout } from '../util/timers.js';

export class Waits {
  private readonly waiters = new Set<() => void>();

  /** Ends every pause started with `wakeOnSlot`. */
  wakeAll(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /** Waits `ms`, or until one of `signals` aborts, or (with `wakeOnSlot`) until `wakeAll`. */
  async wait(ms: number, signals: AbortSignal[], wakeOnSlot: boolean): Promise<void> {
    if (signals.some((signal) => signal.aborted)) return;
    // Not sleep() in a race, nor AbortSignal.any: timers, listeners and derived signals would pile up
    // while idle. Everything added here is removed when the wait ends.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        timer.clear();
        for (const signal of signals) signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setLongTimeout(done, ms);
      for (const signal of signals) signal.addEventListener('abort', done, { once: true });
      if (wakeOnSlot) this.waiters.add(done);
    });
  }
}
