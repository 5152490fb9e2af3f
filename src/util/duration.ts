/**
 * Human durations, the one parser for every place that reads them: `.gitlab-ci.yml` (`timeout: 1h 30m`,
 * `expire_in: 2 weeks`), the artifacts upload's `expire_in` query ("3 mins 4 sec", "2h20min",
 * "47 yrs 6 mos and 4d", `+` for spaces as a form encoder writes them, docs/protocol-v1.md §4.7) and command-line
 * flags (`--long-poll 30s`, `--wait-timeout 1500ms`). A bare number is seconds. Calendar units follow
 * GitLab's parser: a month is 30 days, a year 365.25 days.
 */

const UNIT_SECONDS: ReadonlyMap<string, number> = new Map(
  (
    [
      [0.001, ['ms', 'msec', 'msecs', 'millisecond', 'milliseconds']],
      [1, ['', 's', 'sec', 'secs', 'second', 'seconds']],
      [60, ['m', 'min', 'mins', 'minute', 'minutes']],
      [3600, ['h', 'hr', 'hrs', 'hour', 'hours']],
      [86_400, ['d', 'day', 'days']],
      [604_800, ['w', 'wk', 'wks', 'week', 'weeks']],
      [2_592_000, ['mo', 'mos', 'month', 'months']],
      [31_557_600, ['y', 'yr', 'yrs', 'year', 'years']],
    ] as const
  ).flatMap(([seconds, names]) => names.map((name) => [name, seconds] as const)),
);

const PART = /(\d+(?:\.\d+)?)\s*([a-z]*)/y;

/**
 * Parses a duration into seconds (fractions kept). Returns `undefined` when `text` is not a duration,
 * so each caller answers with its own message; `never` is not a duration (callers that accept it
 * check for it first).
 */
export function parseDurationSeconds(text: string): number | undefined {
  const input = text.toLowerCase().replace(/[,+]|\band\b/g, ' ').trim();
  if (input === '') return undefined;
  let total = 0;
  let index = 0;
  while (index < input.length) {
    while (input[index] === ' ' || input[index] === '\t') index++;
    if (index >= input.length) break;
    PART.lastIndex = index;
    const match = PART.exec(input);
    const unit = match ? UNIT_SECONDS.get(match[2] ?? '') : undefined;
    if (!match || unit === undefined) return undefined;
    total += Number(match[1]) * unit;
    index = PART.lastIndex;
  }
  return Number.isFinite(total) ? total : undefined;
}

/** Parses a duration into whole milliseconds (`30s` → 30000, `1500ms` → 1500, `0` → 0). */
export function parseDurationMs(text: string): number | undefined {
  const seconds = parseDurationSeconds(text);
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}

/** A duration in ms as Go's `time.Duration.String()` prints it: `1h2m3.5s`, `4.25s`, `150ms`, `0s`. */
export function formatGoDuration(ms: number): string {
  if (!(ms > 0)) return '0s';
  if (ms < 1000) return `${trimDecimals(ms)}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1000;
  return `${hours > 0 ? `${hours}h` : ''}${hours > 0 || minutes > 0 ? `${minutes}m` : ''}${trimDecimals(seconds)}s`;
}

function trimDecimals(value: number): string {
  return String(Math.round(value * 1000) / 1000);
}
