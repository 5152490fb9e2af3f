/**
 * Fails running builds that sent no E5/E6 for `timeoutMs` (GitLab's stuck-build worker, §11.3):
 * their runner is gone, and without this the pipeline would wait forever. The same sweep fails
 * pending builds no runner can take (`stuck.ts`).
 */
import type { ServerContext } from '../context.js';
import { sweepStuck } from './stuck.js';
import { cancelBuild, finishBuild } from './transitions.js';

/** Starts the periodic sweep; returns a function that stops it. */
export function startStaleSweeper(ctx: ServerContext): () => void {
  const timeoutMs = ctx.settings.staleBuildTimeoutMs;
  const stuckMs = ctx.settings.stuckPendingTimeoutMs;
  const everyMs = Math.max(25, Math.min(30_000, Math.floor(Math.min(timeoutMs, stuckMs) / 4)));
  const timer = setInterval(() => {
    const now = Date.now();
    sweepStuck(ctx, stuckMs, now);
    for (const build of ctx.store.builds.values()) {
      // A trigger job sends no updates: it waits for its child pipeline, which has its own jobs.
      if (build.status === 'running' && !build.job.trigger && now - build.lastActivityAt > timeoutMs) {
        // A build being canceled whose runner went silent was going to end canceled anyway.
        if (build.canceling) cancelBuild(ctx, build, { force: true });
        else finishBuild(ctx, build, 'failed', `no update for ${timeoutMs} ms`, { failureReason: 'stuck_or_timeout_failure' });
      }
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
