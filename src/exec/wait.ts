/**
 * Waiting for `exec`'s pipeline to end, playing the manual jobs asked for (`--manual`) as they come up.
 * A job is played through the admin API's `POST /admin/api/jobs/:id/play`, exactly as a person at the
 * server would. The server is in this process, so its state is read directly and often (every 25 ms:
 * a lookup in memory), which keeps the time between a pipeline ending and `exec` returning short.
 */
import { CiRunnerError } from '../errors.js';
import type { PipelineView, ReferenceServer } from '../server/index.js';

const TICK_MS = 25;
/** Jobs that move on by themselves (a delayed job waits for its timer as `scheduled`). */
const MOVING = new Set(['created', 'pending', 'running', 'scheduled', 'preparing', 'waiting_for_resource']);
const FINAL = new Set(['success', 'failed', 'canceled', 'skipped']);

/**
 * Over when the pipeline's status is final, or when no job can move any more: jobs left `created`
 * behind a blocking manual job that nobody plays wait forever (GitLab shows the pipeline blocked).
 */
function isOver(view: PipelineView): boolean {
  if (FINAL.has(view.status)) return true;
  if (view.jobs.some((job) => MOVING.has(job.status) && job.status !== 'created')) return false;
  return !view.jobs.some((job) => job.status === 'created') || view.jobs.some((job) => job.status === 'manual');
}

/** A manual job the server would not play. */
export class PlayError extends CiRunnerError {
  constructor(message: string) {
    super('EXEC_PLAY_FAILED', message);
  }
}

/** Plays build `id` over the admin API. */
export async function playJob(server: ReferenceServer, id: number, name: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${server.url}/admin/api/jobs/${id}/play`, { method: 'POST', headers: { 'PRIVATE-TOKEN': server.adminToken }, signal });
  if (response.ok) return;
  const body = (await response.text()).slice(0, 500);
  const hint = response.status === 404 ? ' (this version of the reference server cannot play manual jobs)' : '';
  throw new PlayError(`playing manual job ${name} (#${id}) failed: HTTP ${response.status} ${body}${hint}`);
}

/**
 * Resolves with the pipeline once it has ended. Manual jobs named in `manual` are played (once each)
 * before the pipeline's status is judged: a waiting manual job counts as skipped, which would
 * otherwise end the pipeline before the job it was asked to play.
 */
export async function waitForPipeline(server: ReferenceServer, pipelineId: number, manual: readonly string[], signal: AbortSignal): Promise<PipelineView> {
  const played = new Set<number>();
  for (;;) {
    signal.throwIfAborted();
    let view = server.getPipeline(pipelineId);
    if (!view) throw new CiRunnerError('EXEC_INTERNAL', `pipeline #${pipelineId} disappeared from the server`);
    const toPlay = view.jobs.filter((job) => job.status === 'manual' && manual.includes(job.name) && !played.has(job.id));
    for (const job of toPlay) {
      played.add(job.id);
      await playJob(server, job.id, job.name, signal);
    }
    if (toPlay.length > 0) view = server.getPipeline(pipelineId) ?? view;
    if (toPlay.length === 0 && isOver(view)) return view;
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
}
