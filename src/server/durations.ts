/**
 * Lenient human durations, as GitLab parsed `artifacts:expire_in` (PROTOCOL.md §4.7): "3 mins 4 sec",
 * "2h20min", "6 mos 1 day", "47 yrs 6 mos and 4d", "1 week", "7d"; a bare number is seconds. Also used
 * for the CLI's `--long-poll 30s` style flags.
 */

const UNIT_SECONDS: Array<[RegExp, number]> = [
  [/^(s|secs?|seconds?)$/, 1],
  [/^(m|mins?|minutes?)$/, 60],
  [/^(h|hrs?|hours?)$/, 3600],
  [/^(d|days?)$/, 86_400],
  [/^(w|wks?|weeks?)$/, 7 * 86_400],
  [/^(mo|mos|months?)$/, 30 * 86_400],
  [/^(y|yrs?|years?)$/, 365.25 * 86_400],
];

/**
 * Parses a human duration into seconds. Returns `undefined` when the text is not a duration (so the
 * caller can answer 400 with its own message). `never` is not a duration here; callers handle it.
 */
export function parseDurationSeconds(text: string): number | undefined {
  const cleaned = text
    .toLowerCase()
    .replace(/\band\b/g, ' ')
    .replace(/[,+]/g, ' ')
    .trim();
  if (cleaned === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(cleaned)) return Number(cleaned);
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(cleaned); match; match = part.exec(cleaned)) {
    const unit = UNIT_SECONDS.find(([pattern]) => pattern.test(match[2] ?? ''));
    if (!unit) return undefined;
    total += Number(match[1]) * unit[1];
    consumed = part.lastIndex;
  }
  return consumed === cleaned.length ? total : undefined;
}

/** Parses a duration flag (`30s`, `60m`, `1500ms`, a bare number of seconds) into milliseconds. */
export function parseDurationMs(text: string): number | undefined {
  const ms = /^\s*(\d+)\s*ms\s*$/i.exec(text);
  if (ms) return Number(ms[1]);
  const seconds = parseDurationSeconds(text);
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}
