/**
 * The job's timeline in the log: one debug record per step (`timeline`, with `step`, `at_ms` since
 * pickup and `took_ms`), in the order the steps end. Without debug logging there is no hook at all,
 * so the executors and the trace skip even the clock readings.
 */
import type { Logger } from '../../log/index.js';
import type { MarkStep } from '../../util/timeline.js';

/** The job's step recorder, or undefined when `logger` would drop its records. */
export function jobTimeline(logger: Logger, pickedUp: number): MarkStep | undefined {
  if (!logger.isLevelEnabled('debug')) return undefined;
  return (step, began, fields, ended) => {
    const now = ended ?? performance.now();
    logger.debug({ step, at_ms: Math.round(began - pickedUp), took_ms: Math.round((now - began) * 10) / 10, ...fields }, 'timeline');
  };
}

/**
 * Steps a shell script marked in `text` (lines of `<EPOCHREALTIME> <name>` written by the script, see
 * git-sources.ts), each ending where the next begins; the last ends at `ended` (performance.now()).
 */
export function scriptSteps(text: string, ended: number): Array<{ step: string; began: number; took: number }> {
  const marks = text
    .split('\n')
    .map((line) => /^(\d+)[.,](\d+) (.+)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ step: m[3] ?? '', at: Number(`${m[1]}.${m[2]}`) * 1000 - performance.timeOrigin }));
  return marks
    .map((mark, i) => ({ step: mark.step, began: mark.at, took: (marks[i + 1]?.at ?? ended) - mark.at }))
    .filter((s) => s.step !== 'end');
}
