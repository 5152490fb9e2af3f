/**
 * Fails running builds that sent no E5/E6 for `timeoutMs` (GitLab's stuck-build worker, §11.3):
 * their runner is gone, and without this the pipeline would wait forever.
 */
import type { ServerContext } from '../context.js';
import { finishBuild } from './transitions.js';

/** Starts the periodic sweep; returns a function that stops it. */
export function startStaleSweeper(ctx: ServerContext): () => void {
  const timeoutMs = ctx.settings.staleBuildTimeoutMs;
  const everyMs = Math.max(25, Math.min(30_000, Math.floor(timeoutMs / 4)));
  const timer = setInterval(() => {
    const now = Date.now();
    for (const build of ctx.store.builds.values()) {
      if (build.status === 'running' && now - build.lastActivityAt > timeoutMs) {
        finishBuild(ctx, build, 'failed', `no update for ${timeoutMs} ms`, { failureReason: 'stuck_or_timeout_failure' });
      }
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
