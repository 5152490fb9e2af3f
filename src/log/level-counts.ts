/**
 * How many log lines of each severity the process has written, across every logger `createLogger`
 * made (reloads make new root loggers): GitLab Runner's `gitlab_runner_errors_total{level}` counts
 * its warning, error, fatal and panic lines the same way. Only lines actually written count (a level
 * the logger filters out is not seen).
 */
export const LOGGED_LEVELS = ['panic', 'fatal', 'error', 'warning'] as const;
export type LoggedLevel = (typeof LOGGED_LEVELS)[number];

const counts: Record<LoggedLevel, number> = { panic: 0, fatal: 0, error: 0, warning: 0 };

/** Called for each line with pino's numeric level. */
export function countLogLine(level: number): void {
  if (level >= 60) counts.fatal += 1;
  else if (level >= 50) counts.error += 1;
  else if (level >= 40) counts.warning += 1;
}

/** The counts so far. */
export function logLineCounts(): Readonly<Record<LoggedLevel, number>> {
  return counts;
}
