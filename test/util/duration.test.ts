import { describe, expect, it } from 'vitest';
import { CommandError, EXIT, parseDuration } from '../../src/cli/support.js';
import { parseDurationMs, parseDurationSeconds } from '../../src/util/duration.js';

describe('durations', () => {
  it('reads milliseconds, calendar units and a form-encoded expire_in', () => {
    expect(parseDurationMs('1500ms')).toBe(1500);
    expect(parseDurationSeconds('1 year')).toBe(365.25 * 86_400);
    expect(parseDurationSeconds('6 mos 1 day')).toBe(6 * 30 * 86_400 + 86_400);
    expect(parseDurationSeconds('1+week')).toBe(604_800);
    expect(parseDurationSeconds('47 yrs 6 mos and 4d')).toBe(47 * 31_557_600 + 6 * 2_592_000 + 4 * 86_400);
  });

  it('refuses text that is not a duration', () => {
    expect(parseDurationSeconds('never')).toBeUndefined();
    expect(parseDurationSeconds('5 parsecs')).toBeUndefined();
    expect(parseDurationSeconds('-5m')).toBeUndefined();
  });

  it('turns a bad command-line duration into a usage error naming the flag', () => {
    expect(parseDuration('90s', 'wait-timeout')).toBe(90_000);
    expect(parseDuration(2, 'wait-timeout')).toBe(2000);
    let caught: unknown;
    try {
      parseDuration('soon', 'wait-timeout');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CommandError);
    expect((caught as CommandError).exitCode).toBe(EXIT.usage);
    expect((caught as Error).message).toBe('--wait-timeout: "soon" is not a duration; use e.g. 60s, 2m, 1h30m');
  });
});
