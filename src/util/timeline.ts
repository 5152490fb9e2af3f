/**
 * A job's timeline: each step (a git command, a docker call, a script write, the first PATCH, an
 * upload, the final update) says when it began and how long it took, so `--debug` and the benchmark
 * show where a job's time goes. Steps are marked where the work happens, in any layer; the agent
 * decides where the marks go (a debug log line per step) and passes no hook when nobody listens.
 */

/**
 * Records one step; `began` and `ended` are `performance.now()` readings, `ended` by default the
 * moment of the call.
 */
export type MarkStep = (step: string, began: number, fields?: Record<string, unknown>, ended?: number) => void;

/** Runs `work` as step `step` of `mark` (it is marked whether it resolves or rejects). */
export async function timed<T>(mark: MarkStep | undefined, step: string, work: () => Promise<T>, fields?: Record<string, unknown>): Promise<T> {
  if (!mark) return work();
  const began = performance.now();
  try {
    return await work();
  } finally {
    mark(step, began, fields);
  }
}
