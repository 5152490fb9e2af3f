/**
 * When the live trace sender sends (docs/protocol-v1.md §7.2; docs/protocol-v4.md §8): new output at
 * once when the sender was idle, then at most once an update interval; a keep-alive once a keep-alive
 * interval while nothing is new; whole PATCH parts back to back while a burst has one waiting; never
 * before a failed request's backoff has passed. The server's interval replaces both intervals.
 */
import { Backoff, type RetryPolicy } from '../client/retry.js';

export const RETRY_POLICY: RetryPolicy = { baseMs: 500, maxMs: 10_000 };

/** What the sender has to send, asked afresh at every wake-up. */
export interface PendingWork {
  /** Output the server does not have. */
  news(): boolean;
  /** Refused by the server: nothing more goes out live. */
  halted(): boolean;
  /** A whole PATCH part of new output is unsent. */
  partWaiting(): boolean;
  /** The sender is stopping. */
  stopped(): boolean;
}

/** Why a request is due: the interval passed, or a whole part is waiting. */
export type Due = 'interval' | 'part';

export class TracePacer {
  private lastRequestAt: number;
  /** Between batches of new output. */
  private updateIntervalMs: number;
  /** Between keep-alives while nothing is new. */
  private keepaliveIntervalMs: number;
  /** Failed rounds in a row; progress resets it. */
  private readonly backoff = new Backoff(RETRY_POLICY);
  private retryAt = 0;
  /** Asleep until new output (nothing unsent), or until a whole part is unsent. */
  private waitingFor: 'data' | 'part' | undefined;
  private wake: (() => void) | undefined;

  constructor(updateIntervalMs: number, keepaliveIntervalMs: number) {
    this.updateIntervalMs = updateIntervalMs;
    this.keepaliveIntervalMs = keepaliveIntervalMs;
    // As if the last request were one interval ago: the first output goes out at once.
    this.lastRequestAt = Date.now() - updateIntervalMs;
  }

  /** The interval the server asked for last (or the configured one). */
  get interval(): number {
    return this.updateIntervalMs;
  }

  /** The server's `X-GitLab-Trace-Update-Interval`: it paces new output and keep-alives alike. */
  serverInterval(ms: number): void {
    this.updateIntervalMs = ms;
    this.keepaliveIntervalMs = ms;
  }

  /** A request is going out now. */
  requested(): void {
    this.lastRequestAt = Date.now();
  }

  /** The server took more of the trace: a failure streak ends. */
  progressed(): void {
    this.backoff.succeeded();
  }

  /** A round ended well or badly; a bad one waits out the backoff (or the server's `Retry-After`). */
  roundEnded(ok: boolean, retryAfterMs: number | undefined): void {
    if (ok) {
      this.backoff.succeeded();
      this.retryAt = 0;
    } else {
      this.retryAt = Date.now() + this.backoff.failed(retryAfterMs);
    }
  }

  /** Output arrived: wakes a sender that sleeps until there is some (or until a whole part is). */
  notify(work: PendingWork): void {
    if (this.waitingFor === 'data' || (this.waitingFor === 'part' && work.partWaiting())) this.wake?.();
  }

  /** Wakes the sender whatever it waits for (it is stopping). */
  interrupt(): void {
    this.wake?.();
  }

  /** Waits until a request is due; undefined when the sender stops or `signal` aborts first. */
  async next(work: PendingWork, signal: AbortSignal): Promise<Due | undefined> {
    for (;;) {
      if (work.stopped() || signal.aborted) return undefined;
      const now = Date.now();
      const news = work.news();
      const halted = work.halted();
      let due = halted ? Number.POSITIVE_INFINITY : this.lastRequestAt + this.keepaliveIntervalMs;
      if (news && !halted) due = Math.min(due, this.lastRequestAt + this.updateIntervalMs);
      due = Math.max(due, this.retryAt);
      if (due <= now) return 'interval';
      // Not before a failed request's backoff has passed.
      if (this.retryAt <= now && work.partWaiting()) return 'part';
      this.waitingFor = !news ? 'data' : this.retryAt > now ? undefined : 'part';
      await this.sleep(due - now, signal);
      this.waitingFor = undefined;
    }
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
