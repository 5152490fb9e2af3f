/**
 * The one retry helper and its table, without a network: backoff with jitter, Retry-After, attempt
 * limits, aborts, and which answers and transport errors are worth another try.
 */
import { describe, expect, it } from 'vitest';
import { CiRunnerError } from '../../src/util/errors.js';
import { Backoff, retry, retryDelay, type Step } from '../../src/client/retry.js';
import { classify, retryAfterMs, worthRetrying } from '../../src/client/retryable.js';

/** Records the waits instead of waiting. */
function recordedSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

describe('the retry table', () => {
  it('retries 5xx, 429 and transport errors, and stops on what a retry cannot change', () => {
    expect(classify('updateBuild', 502)).toBe('retry');
    expect(classify('updateBuild', 429)).toBe('retry');
    expect(classify('updateBuild', -1)).toBe('retry');
    expect(classify('updateBuild', 404)).toBe('final');
    expect(classify('uploadArtifacts', 413)).toBe('final');
    expect(classify('patchTrace', 416)).toBe('final');
  });

  it('does not retry a transport error no attempt can mend, such as a proxy URL that is not one', () => {
    const badProxy = new CiRunnerError('PROXY_URL_INVALID', 'the proxy URL "http://[x" is not a URL');
    expect(worthRetrying({ outcome: 'retry', status: -1, error: badProxy })).toBe(false);
    const wrapped = new Error('request failed', { cause: Object.assign(new Error('bad option'), { code: 'UND_ERR_INVALID_ARG' }) });
    expect(worthRetrying({ outcome: 'retry', status: -1, error: wrapped })).toBe(false);
    expect(worthRetrying({ outcome: 'retry', status: -1, error: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) })).toBe(true);
    expect(worthRetrying({ outcome: 'retry', status: -1, error: Object.assign(new Error('x'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }) })).toBe(true);
    expect(worthRetrying({ outcome: 'retry', status: 503 })).toBe(true);
    expect(worthRetrying({ outcome: 'final', status: 403 })).toBe(false);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Wed, 01 Jan 2025 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('the backoff', () => {
  it('doubles from the base up to the cap, each wait jittered within its upper half', () => {
    const low = { baseMs: 100, maxMs: 1000, random: () => 0 };
    const high = { baseMs: 100, maxMs: 1000, random: () => 0.999999 };
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(low, n))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(high, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('waits as long as the server asks when that is longer, up to a ceiling', () => {
    const policy = { baseMs: 100, maxMs: 1000, random: () => 0, maxRetryAfterMs: 60_000 };
    expect(retryDelay(policy, 1, 5_000)).toBe(5_000);
    expect(retryDelay(policy, 4, 10)).toBe(400);
    expect(retryDelay(policy, 1, 3_600_000)).toBe(60_000);
  });

  it('starts over after a success', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0 });
    expect([backoff.failed(), backoff.failed(), backoff.failed()]).toEqual([50, 100, 200]);
    backoff.succeeded();
    expect(backoff.failures).toBe(0);
    expect(backoff.failed()).toBe(50);
  });
});

describe('retry', () => {
  it('tries until the step is done, waiting the backoff or the Retry-After between tries', async () => {
    const { waits, sleep } = recordedSleep();
    const answers: Step<string, number>[] = [{ failed: 503 }, { failed: 429, retryAfterMs: 7_000 }, { done: 'ok' }];
    const seen: number[] = [];
    const end = await retry(async (attempt) => (seen.push(attempt), answers.shift()!), {
      policy: { baseMs: 1000, maxMs: 30_000, random: () => 0 },
      sleep,
    });
    expect(end).toEqual({ ok: true, value: 'ok', attempts: 3 });
    expect(seen).toEqual([1, 2, 3]);
    expect(waits).toEqual([500, 7_000]);
  });

  it('gives up after the attempts with the last failure, telling each retry before its wait', async () => {
    const { waits, sleep } = recordedSleep();
    const told: string[] = [];
    const end = await retry(async (attempt) => ({ failed: `HTTP 50${attempt}` }), {
      policy: { baseMs: 10, maxMs: 100, attempts: 3, random: () => 0 },
      sleep,
      onRetry: (failure, attempt, delay) => told.push(`${failure} #${attempt} ${delay}`),
    });
    expect(end).toEqual({ ok: false, failure: 'HTTP 503', attempts: 3 });
    expect(told).toEqual(['HTTP 501 #1 5', 'HTTP 502 #2 10']);
    expect(waits).toEqual([5, 10]);
  });

  it('rejects with the reason as soon as the signal aborts, waiting or not', async () => {
    const stop = new AbortController();
    let calls = 0;
    const run = retry(async () => {
      calls += 1;
      return { failed: 'down' };
    }, { policy: { baseMs: 3_600_000, maxMs: 3_600_000 }, signal: stop.signal });
    await new Promise((resolve) => setImmediate(resolve));
    stop.abort(new Error('shutting down'));
    await expect(run).rejects.toThrow('shutting down');
    expect(calls).toBe(1);
    await expect(retry(async () => ({ done: 1 }), { policy: { baseMs: 1, maxMs: 1 }, signal: stop.signal })).rejects.toThrow('shutting down');
  });
});
