/**
 * A pool of request-body bytes the server may hold in memory at once. A request reserves what it
 * will buffer (its Content-Length, or its route's cap for a chunked body) before reading a byte, and
 * waits — its body left unread in the kernel, so TCP pushes back on the client — while the pool is
 * spent. Whole reservations, taken once, mean no request holds part of the pool while waiting for
 * more, so waiters cannot deadlock; a reservation larger than the pool is cut to the pool, so one
 * request always fits alone.
 */
import { HttpError } from './reply.js';

interface Waiter {
  bytes: number;
  grant: () => void;
}

/** Bytes held in a pool until released. */
export interface Reservation {
  /** Gives every byte back; calling it again does nothing. */
  release(): void;
  /** Gives back what is held beyond `bytes` (a body turned out smaller than reserved). */
  shrinkTo(bytes: number): void;
}

export class ByteBudget {
  private used = 0;
  private readonly waiters: Waiter[] = [];

  constructor(readonly total: number) {}

  /** Bytes currently reserved (for tests and logs). */
  get inUse(): number {
    return this.used;
  }

  /**
   * Reserves `bytes` (at most the whole pool) and resolves with the reservation. Rejects with a 499
   * when `signal` aborts first (the client went away while waiting).
   */
  acquire(bytes: number, signal: AbortSignal): Promise<Reservation> {
    const want = Math.max(0, Math.min(bytes, this.total));
    let held = want;
    const shrinkTo = (target: number): void => {
      const keep = Math.max(0, Math.min(held, target));
      this.used -= held - keep;
      held = keep;
      this.drain();
    };
    const reservation: Reservation = { release: () => shrinkTo(0), shrinkTo };
    if (this.waiters.length === 0 && this.used + want <= this.total) {
      this.used += want;
      return Promise.resolve(reservation);
    }
    return new Promise<Reservation>((resolve, reject) => {
      const waiter: Waiter = {
        bytes: want,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(reservation);
        },
      };
      const onAbort = (): void => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        this.drain();
        reject(new HttpError(499, 'client went away'));
      };
      if (signal.aborted) {
        reject(new HttpError(499, 'client went away'));
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Grants waiters in arrival order while they fit (first come, first served: no starvation). */
  private drain(): void {
    while (this.waiters.length > 0) {
      const next = this.waiters[0]!;
      if (this.used + next.bytes > this.total) return;
      this.waiters.shift();
      this.used += next.bytes;
      next.grant();
    }
  }
}
