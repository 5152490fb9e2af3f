import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, setLongTimeout, sleep } from '../../src/util/timers.js';

const DAY = 86_400_000;

describe('setLongTimeout', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits the whole 30 days instead of firing at once as a plain timer past 2^31-1 ms does', () => {
    const fired = vi.fn();
    setLongTimeout(fired, 30 * DAY);
    vi.advanceTimersByTime(1000);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(30 * DAY - 1001);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledOnce();
  });

  it('fires short delays like setTimeout, and never once cleared', () => {
    const short = vi.fn();
    const cleared = vi.fn();
    setLongTimeout(short, 500);
    const timer = setLongTimeout(cleared, MAX_TIMER_MS + 10);
    vi.advanceTimersByTime(500);
    expect(short).toHaveBeenCalledOnce();
    vi.advanceTimersByTime(MAX_TIMER_MS - 1000);
    timer.clear();
    vi.advanceTimersByTime(DAY);
    expect(cleared).not.toHaveBeenCalled();
  });

  it('never fires for an infinite delay', () => {
    const fired = vi.fn();
    setLongTimeout(fired, Infinity);
    vi.advanceTimersByTime(365 * DAY);
    expect(fired).not.toHaveBeenCalled();
  });

  it('makes the shared sleep wait past 24.8 days', async () => {
    let done = false;
    void sleep(25 * DAY).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(DAY);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(24 * DAY);
    expect(done).toBe(true);
  });
});
