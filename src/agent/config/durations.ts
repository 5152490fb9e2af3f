/**
 * GitLab Runner's durations in config.toml (Go's `time.Duration`, which its TOML reader takes as a
 * string such as "30s", "1h30m", "1.5h" or as an integer of nanoseconds), read as seconds.
 */
import { z } from 'zod';
import { parseDurationSeconds } from '../../util/duration.js';

/** Go's units, as `time.ParseDuration` takes them: `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`. */
const GO_DURATION = /^-?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$|^0$/;

const SUB_MILLI: Readonly<Record<string, number>> = { ns: 1e-9, us: 1e-6, µs: 1e-6 };

function goSeconds(text: string): number | undefined {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  let total = 0;
  for (const [, amount = '', unit = ''] of body.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)?/g)) {
    const scale = SUB_MILLI[unit];
    const seconds = scale !== undefined ? Number(amount) * scale : parseDurationSeconds(`${amount}${unit}`);
    if (seconds === undefined) return undefined;
    total += seconds;
  }
  return negative ? -total : total;
}

/** A duration in seconds (negative stays negative: GitLab Runner warns about those where it reads them). */
export const goDuration = z.union(
  [
    z
      .string()
      .regex(GO_DURATION, 'a duration such as "30s", "15m" or "1h30m"')
      .transform((text) => goSeconds(text) ?? 0),
    z.int().transform((nanoseconds) => nanoseconds / 1e9),
  ],
  { error: 'a duration such as "30s", "15m" or "1h30m" (or an integer of nanoseconds)' },
);
