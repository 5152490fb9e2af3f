/**
 * `when: delayed` jobs: a `scheduled` build is queued at its `scheduledAt` by a timer, one per build,
 * armed whenever its pipeline moves (and at start, for builds a data dir brought back). A build that
 * was played, canceled or retried meanwhile is left alone when its timer fires.
 */
import { setLongTimeout } from '../../util/timers.js';
import type { ServerContext } from '../context.js';
import { assignResources, queuedStatus } from './resource-groups.js';
import type { PipelineRecord } from './store.js';

const armed = new WeakMap<ServerContext, Map<number, { clear(): void }>>();

function timersOf(ctx: ServerContext): Map<number, { clear(): void }> {
  let timers = armed.get(ctx);
  if (!timers) {
    const created = new Map<number, { clear(): void }>();
    ctx.closing.addEventListener('abort', () => {
      for (const timer of created.values()) timer.clear();
      created.clear();
    }, { once: true });
    armed.set(ctx, created);
    timers = created;
  }
  return timers;
}

/** Arms a timer for every scheduled build of `pipeline` that has none. */
export function armDelayedBuilds(ctx: ServerContext, pipeline: PipelineRecord): void {
  if (ctx.closing.aborted) return;
  for (const build of ctx.store.pipelineBuilds(pipeline)) {
    if (build.status !== 'scheduled' || !build.scheduledAt) continue;
    const timers = timersOf(ctx);
    if (timers.has(build.id)) continue;
    const fire = (): void => {
      timers.delete(build.id);
      if (ctx.closing.aborted || build.status !== 'scheduled') return;
      ctx.store.changeBuild(build, (b) => {
        b.status = queuedStatus(b);
        b.lastActivityAt = Date.now();
      });
      ctx.logger.info({ buildId: build.id, status: build.status }, 'delayed build queued');
      assignResources(ctx.store);
      ctx.scheduler.buildsQueued();
    };
    timers.set(build.id, setLongTimeout(fire, Math.max(0, build.scheduledAt.getTime() - Date.now()), { unref: true }));
  }
}
