/**
 * Job slots shared by all entries: `concurrent` for the process, `limit` per entry (polls count
 * against it), and at most `request_concurrency` polls in flight per entry. A slot is reserved before
 * polling, so a job the server hands out always has somewhere to run; it passes to that job and is
 * freed when the job ends, or at once when the poll brings no job.
 */
import type { RunnerConfig } from './config/schema.js';
import type { Waits } from './waits.js';

/** The per-entry counts the accounting reads and updates. */
export interface SlotUser {
  config: Pick<RunnerConfig, 'limit' | 'request_concurrency'>;
  running: number;
  polling: number;
}

export class JobCapacity {
  /** Slots held by polls in flight and by running jobs. */
  private reserved = 0;

  /** `concurrent` is read at each check, so a reload's new value counts at once. */
  constructor(
    private readonly concurrent: () => number,
    private readonly waits: Waits,
  ) {}

  /** Whether `entry` may poll now. */
  hasSlot(entry: SlotUser): boolean {
    const { limit, request_concurrency } = entry.config;
    return this.reserved < this.concurrent() && (limit === 0 || entry.running + entry.polling < limit) && entry.polling < request_concurrency;
  }

  /** Takes a slot for a poll about to start. */
  reserve(entry: SlotUser): void {
    this.reserved += 1;
    entry.polling += 1;
  }

  /** The poll ended: with a job, its slot stays reserved for the job; without, it is freed. */
  pollEnded(entry: SlotUser, gotJob: boolean): void {
    entry.polling -= 1;
    if (!gotJob) {
      this.reserved -= 1;
      this.waits.wakeAll();
    }
  }

  /** A job started on the slot its poll reserved. */
  jobStarted(entry: SlotUser): void {
    entry.running += 1;
  }

  /** A job ended: its slot is free. */
  jobEnded(entry: SlotUser): void {
    entry.running -= 1;
    this.reserved -= 1;
    this.waits.wakeAll();
  }

  /**
   * Waits until a slot may have freed (a job ended, a poll released its reservation, a reload), or
   * `stop` aborts (shutdown); at most a minute, in case a wake-up was missed. Only loops that found
   * no slot wait here: waking them is what the shared waiter set is for.
   */
  async waitForSlot(stop: AbortSignal): Promise<void> {
    await this.waits.wait(60_000, [stop], true);
  }
}
