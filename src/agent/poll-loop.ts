/**
 * An entry's poll loops (`request_concurrency` of them). Idle loops poll every `check_interval`
 * (with jitter); after receiving a job a loop polls again at once while slots are free, so a queue
 * drains without waiting for ticks (unless `strict_check_interval`). A refused token (403) is asked
 * again at check_interval, 5xx and network errors back off exponentially up to a minute, or as long as
 * the coordinator's `Retry-After` asks; `unhealthy_requests_limit` refusals or network errors in a row
 * pause the entry for `unhealthy_interval` (health.ts).
 */
import { retryDelay } from '../client/retry.js';
import type { Logger } from '../log/index.js';
import { unhealthyWait } from './health.js';
import type { RunnerEntry } from './entry.js';
import type { JobCapacity } from './job-capacity.js';
import type { Waits } from './waits.js';

/** What the loops need from the agent. */
export interface PollLoopContext {
  /** Aborted when shutdown starts: loops end after their current poll. */
  readonly stop: AbortSignal;
  readonly capacity: JobCapacity;
  readonly waits: Waits;
  /** `check_interval` in seconds, read at each pause (a reload may change it). */
  checkInterval(): number;
  logger(): Logger;
  /** One E4 for `entry`; true when a job was started (its slot stays reserved until it ends). */
  poll(entry: RunnerEntry, log: Logger): Promise<boolean>;
  /** Holds a running loop until it ends (shutdown waits for it). */
  track(loop: Promise<void>): void;
}

/**
 * Starts poll loops until the entry has `request_concurrency` of them (each holds at most one job
 * request at a time). Surplus loops after a reload lowered it end themselves (see pollUntilStopped).
 */
export function fillLoops(entry: RunnerEntry, context: PollLoopContext): void {
  while (entry.loopCount < entry.config.request_concurrency && !entry.removed && !context.stop.aborted) {
    entry.loopCount += 1;
    context.track(
      pollLoop(entry, context).catch((error: unknown) => {
        context.logger().error({ err: error, runner: entry.config.name }, 'poll loop crashed');
      }),
    );
  }
}

async function pollLoop(entry: RunnerEntry, context: PollLoopContext): Promise<void> {
  let left = false;
  try {
    left = await pollUntilStopped(entry, context);
  } finally {
    if (!left) entry.loopCount -= 1;
  }
}

/** Polls until shutdown or removal; true when it left as a surplus loop (already uncounted). */
async function pollUntilStopped(entry: RunnerEntry, context: PollLoopContext): Promise<boolean> {
  const { capacity, stop } = context;
  while (!stop.aborted && !entry.removed) {
    if (entry.loopCount > entry.config.request_concurrency) {
      // Uncounted here, in the same step as the check, so two surplus loops cannot both leave.
      entry.loopCount -= 1;
      return true;
    }
    if (!capacity.hasSlot(entry)) {
      await capacity.waitForSlot(stop);
      continue;
    }
    const unhealthy = unhealthyWait(entry.health, entry.config, context.logger().child({ runner: entry.config.name }));
    if (unhealthy > 0) {
      await rest(entry, unhealthy, context);
      continue;
    }
    capacity.reserve(entry);
    let got = false;
    try {
      got = await context.poll(entry, context.logger().child({ runner: entry.config.name }));
    } finally {
      capacity.pollEnded(entry, got);
    }
    const base = context.checkInterval() * 1000;
    if (got && !entry.config.strict_check_interval) continue; // poll again at once while slots are free
    // A healthy answer may still ask for a pause (a 409 race with Retry-After): never sooner than it says.
    const delay = entry.failures > 0 && !got ? failureDelay(entry, base) : Math.max(jitter(base), Math.min(entry.retryAfterMs ?? 0, MAX_HEALTHY_PAUSE_MS));
    await rest(entry, delay, context);
  }
  return false;
}

/**
 * The entry's check_interval or backoff pause. Nothing another loop does shortens it (a poll
 * finishing elsewhere must not make this entry poll early: with several entries that was a poll
 * storm); only shutdown, or a reload that changed or removed this entry, ends it early.
 */
async function rest(entry: RunnerEntry, ms: number, context: PollLoopContext): Promise<void> {
  await context.waits.wait(ms, [context.stop, entry.changed.signal], false);
}

/** A refused token is asked again at check_interval, as GitLab Runner does (the unhealthy pause bounds it). */
function failureDelay(entry: RunnerEntry, baseMs: number): number {
  return entry.lastStatus === 403 ? jitter(baseMs) : retryDelay({ baseMs, maxMs: 60_000 }, entry.failures, entry.retryAfterMs);
}

/** Longest `Retry-After` a healthy answer can make an entry wait. */
const MAX_HEALTHY_PAUSE_MS = 10 * 60_000;

/** ±20 % around `ms`, so many runners do not poll in lockstep. */
function jitter(ms: number): number {
  return Math.round(ms * (0.8 + Math.random() * 0.4));
}
