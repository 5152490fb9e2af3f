/**
 * Jobs no runner can take (GitLab's "stuck" jobs): pending, but no active runner has their tags, takes
 * untagged jobs, or serves their project. GitLab fails such a job after an hour with
 * `stuck_or_timeout_failure`; so does this server (`stuckPendingTimeoutMs`), writing why into the
 * job's log, so that no pipeline waits for ever on a job nobody will run. A runner registered or
 * changed meanwhile that can take the job makes it an ordinary pending job again.
 */
import type { ServerContext } from '../context.js';
import { canRun, fitsTags } from './scheduler.js';
import type { BuildRecord, RunnerRecord, Store } from './store.js';
import { finishBuild } from './transitions.js';

/** Why no runner of `runners` can take `build`, or undefined when one can (trigger jobs are the server's own). */
export function whyNoRunner(build: BuildRecord, runners: Iterable<RunnerRecord>, store?: Store): string | undefined {
  if (build.job.trigger) return undefined;
  const active = [...runners].filter((runner) => runner.active);
  if (active.some((runner) => canRun(runner, build, store))) return undefined;
  if (active.length === 0) return 'no runner is registered and active';
  const tags = build.job.tags;
  const serving = active.filter((runner) => runner.projectId === null || runner.projectId === build.projectId);
  if (serving.length === 0) return "no runner serves this job's project";
  const fitting = serving.filter((runner) => fitsTags(runner, build));
  if (fitting.length === 0) {
    if (tags.length === 0) return 'it has no tags, and no runner takes untagged jobs (run_untagged)';
    return `no runner has all of its tags (${tags.join(', ')}); runners have ${[...new Set(serving.flatMap((runner) => runner.tags))].join(', ') || 'no tags'}`;
  }
  return 'the runners that fit it take jobs of protected refs only (access_level ref_protected), and its ref is not protected';
}

/** The pending jobs no runner can take right now, each with why. */
export function unrunnableBuilds(ctx: ServerContext): Array<{ build: BuildRecord; reason: string }> {
  const found: Array<{ build: BuildRecord; reason: string }> = [];
  for (const build of ctx.store.builds.values()) {
    if (build.status !== 'pending') continue;
    const reason = whyNoRunner(build, ctx.store.runners.values(), ctx.store);
    if (reason !== undefined) found.push({ build, reason });
  }
  return found;
}

/** Fails `build` as stuck, its log saying why. */
export async function failStuck(ctx: ServerContext, build: BuildRecord, reason: string): Promise<void> {
  const line = `\nERROR: Job failed: this job is stuck, no runner can run it: ${reason}. Register a runner that can, or change the job's tags.\n`;
  await ctx.traces.append(build, build.traceSize, Buffer.from(line), []);
  if (build.status === 'pending') finishBuild(ctx, build, 'failed', reason, { failureReason: 'stuck_or_timeout_failure' });
}

/** Fails jobs that no runner could take for `timeoutMs` since they became pending. */
export function sweepStuck(ctx: ServerContext, timeoutMs: number, now = Date.now()): void {
  for (const { build, reason } of unrunnableBuilds(ctx)) {
    if (now - build.lastActivityAt < timeoutMs) continue;
    ctx.logger.warn({ buildId: build.id, reason }, 'job stuck: no runner can take it');
    failStuck(ctx, build, reason).catch((error: unknown) => ctx.logger.error({ err: error, buildId: build.id }, 'could not fail a stuck job'));
  }
}
