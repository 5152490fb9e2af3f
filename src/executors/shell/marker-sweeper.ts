/**
 * The marker sweep of jobs that had a cgroup, shared by a daemon's shell jobs. Once such a job's
 * cgroup is killed and removed, the sweep can only find processes the job moved out of its cgroup
 * itself (a root job can): it is the second net, not the first. A pass over /proc reads every
 * process's environment (~2 ms of CPU here, and several times that in thread-pool traffic beside a
 * busy daemon's other work, such as the final update it would otherwise delay), so these sweeps are
 * paced: a pass starts at most once per `paceMs` and covers every marker asked for until it starts.
 * An idle sweeper starts its pass at once; behind a recent pass a marker waits up to `paceMs`, unless
 * the daemon is stopping (`hurry`): then nothing waits for the pace, as the exit waits for the sweeps.
 * A job without a cgroup is swept at once by its executor (the sweep is its only net for `setsid`).
 */
import { sweepMarkedAmong } from './process-group.js';

/** Default pace: at most two passes a second, whatever the number of jobs ending. */
export const SWEEP_PACE_MS = 500;

export interface MarkerSweeperOptions {
  /** Least time between the starts of two passes. */
  paceMs?: number;
  /** One pass for these markers: killed processes per marker (tests count the passes). */
  sweep?: (markers: readonly string[]) => Promise<Map<string, number>>;
}

interface Waiter {
  resolve(killed: number): void;
  reject(error: unknown): void;
}

/** Coalesces the marker sweeps of a daemon's jobs into paced passes over /proc. */
export class MarkerSweeper {
  private readonly paceMs: number;
  private readonly sweepPass: (markers: readonly string[]) => Promise<Map<string, number>>;
  private queued = new Map<string, Waiter[]>();
  private timer: NodeJS.Timeout | undefined;
  private passing = false;
  private lastStart = -Infinity;
  private hurried = false;

  constructor(options: MarkerSweeperOptions = {}) {
    this.paceMs = options.paceMs ?? SWEEP_PACE_MS;
    this.sweepPass = options.sweep ?? ((markers) => sweepMarkedAmong(markers));
  }

  /** Kills the processes carrying `marker`, in the next pass that starts after this call; resolves with their number. */
  sweep(marker: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const waiters = this.queued.get(marker);
      if (waiters) waiters.push({ resolve, reject });
      else this.queued.set(marker, [{ resolve, reject }]);
      this.schedule();
    });
  }

  /** From now on every pass starts as soon as the one before has ended: the daemon is stopping. */
  hurry(): void {
    this.hurried = true;
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule();
  }

  /** Arms the next pass: now when the last one started at least `paceMs` ago (or `hurry` was called), else when it has. */
  private schedule(): void {
    if (this.passing || this.timer || this.queued.size === 0) return;
    const wait = this.hurried ? 0 : Math.max(0, this.lastStart + this.paceMs - performance.now());
    // Not unref'd: a marker waiting for its pass is work the daemon owes before it exits.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pass();
    }, wait);
  }

  private async pass(): Promise<void> {
    const batch = this.queued;
    this.queued = new Map();
    this.passing = true;
    this.lastStart = performance.now();
    try {
      const killed = await this.sweepPass([...batch.keys()]);
      for (const [marker, waiters] of batch) for (const waiter of waiters) waiter.resolve(killed.get(marker) ?? 0);
    } catch (error) {
      for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error);
    } finally {
      this.passing = false;
      this.schedule();
    }
  }
}
