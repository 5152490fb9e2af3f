/**
 * Human durations as `.gitlab-ci.yml` writes them (`timeout: 1h 30m`, `expire_in: 2 weeks`), in seconds.
 * Pure; shared by the parser (job `timeout`) and the server (artifacts `expire_in`).
 */

const UNIT_SECONDS: ReadonlyMap<string, number> = new Map(
  (
    [
      [1, ['', 's', 'sec', 'secs', 'second', 'seconds']],
      [60, ['m', 'min', 'mins', 'minute', 'minutes']],
      [3600, ['h', 'hr', 'hrs', 'hour', 'hours']],
      [86_400, ['d', 'day', 'days']],
      [604_800, ['w', 'wk', 'wks', 'week', 'weeks']],
      // Calendar units are approximations, as in GitLab's own parser: a month is 30 days, a year 365.
      [2_592_000, ['mo', 'mos', 'month', 'months']],
      [31_536_000, ['y', 'yr', 'yrs', 'year', 'years']],
    ] as const
  ).flatMap(([seconds, names]) => names.map((name) => [name, seconds] as const)),
);

const PART = /(\d+(?:\.\d+)?)\s*([a-z]*)/y;

/**
 * Parses `90`, `45s`, `10 minutes`, `1h 30m`, `1h30m`, `1 hour and 30 minutes`, `2 weeks` into whole
 * seconds (rounded). Returns undefined when `text` is not a positive duration (including `never`,
 * which callers that accept it check for themselves).
 */
export function parseDuration(text: string): number | undefined {
  const input = text.toLowerCase().replace(/,|\band\b/g, ' ').trim();
  if (input === '') return undefined;
  let total = 0;
  let index = 0;
  while (index < input.length) {
    while (input[index] === ' ' || input[index] === '\t') index++;
    if (index >= input.length) break;
    PART.lastIndex = index;
    const match = PART.exec(input);
    if (match === null) return undefined;
    const unit = UNIT_SECONDS.get(match[2] ?? '');
    if (unit === undefined) return undefined;
    total += Number(match[1]) * unit;
    index = PART.lastIndex;
  }
  const seconds = Math.round(total);
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : undefined;
}
