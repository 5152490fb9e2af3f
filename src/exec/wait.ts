/**
 * Waiting for `exec`'s pipeline and the child pipelines its trigger jobs create, playing the manual
 * jobs asked for (`--manual`) as they come up. A job is played through the admin API's
 * `POST /admin/api/jobs/:id/play`, exactly as a person at the server would. The server is in this
 * process, so its state is read directly, at each of its changes (`onChange`) and at least every
 * TICK_MS, which keeps the time between a pipeline ending and `exec` returning short.
 *
 * `exec` never waits for nothing: it is the machine, so its runner takes every job whatever its tags
 * (a child pipeline's tags are added as they appear); a pending job that still no runner can take is
 * failed with the reason in its log; and a runner that stopped while jobs wait ends the wait.
 */
import { CiRunnerError } from '../util/errors.js';
import type { PipelineView, ReferenceServer } from '../server/index.js';

/** The longest wait between two looks at the pipelines; the server's changes wake the loop at once. */
const TICK_MS = 250;
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
export async function playJob(server: Pick<ReferenceServer, 'url' | 'adminToken'>, id: number, name: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${server.url}/admin/api/jobs/${id}/play`, { method: 'POST', headers: { 'PRIVATE-TOKEN': server.adminToken }, signal });
  if (response.ok) return;
  const body = (await response.text()).slice(0, 500);
  const hint = response.status === 404 ? ' (this version of the reference server cannot play manual jobs)' : '';
  throw new PlayError(`playing manual job ${name} (#${id}) failed: HTTP ${response.status} ${body}${hint}`);
}

/** One pipeline of the run: the one exec created, or a child pipeline (with the trigger job that made it). */
export interface RunPipeline {
  view: PipelineView;
  /** The trigger job's name, for a child pipeline. */
  trigger?: string;
}

/** The pipeline and its child pipelines, parents before children. */
function pipelineTree(server: ReferenceServer, rootId: number): RunPipeline[] {
  const root = server.getPipeline(rootId);
  if (!root) throw new CiRunnerError('EXEC_INTERNAL', `pipeline #${rootId} disappeared from the server`);
  const tree: RunPipeline[] = [{ view: root }];
  for (let i = 0; i < tree.length; i += 1) {
    for (const child of tree[i]?.view.downstream ?? []) {
      const view = server.getPipeline(child.id);
      if (view) tree.push({ view, trigger: child.job });
    }
  }
  return tree;
}

export interface WaitOptions {
  /** Manual jobs to play when they come up (by name, in any pipeline of the run). */
  manual: readonly string[];
  /** exec's runner: its token, and the tags it was given. */
  runner: { token: string; tags: Set<string> };
  /** Settles when the runner's agent stops. */
  agentDone: Promise<unknown>;
  /** A line for the person watching (a stuck job, a trigger job's outcome). */
  note: (text: string) => void;
  signal: AbortSignal;
}

/**
 * Resolves with the run's pipelines once all of them have ended. Manual jobs named in `manual` are
 * played (once each) before a pipeline's status is judged: a waiting manual job counts as skipped,
 * which would otherwise end the pipeline before the job it was asked to play.
 */
export async function waitForPipeline(server: ReferenceServer, pipelineId: number, options: WaitOptions): Promise<RunPipeline[]> {
  const played = new Set<number>();
  const stuck = new Set<number>();
  const waiting = new Set<number>();
  let agentStopped = false;
  const stopped = (): void => {
    agentStopped = true;
  };
  options.agentDone.then(stopped, stopped);
  for (;;) {
    options.signal.throwIfAborted();
    let tree = pipelineTree(server, pipelineId);
    const jobs = tree.flatMap((pipeline) => pipeline.view.jobs);
    const toPlay = jobs.filter((job) => job.status === 'manual' && options.manual.includes(job.name) && !played.has(job.id));
    for (const job of toPlay) {
      played.add(job.id);
      await playJob(server, job.id, job.name, options.signal);
    }
    await takeEveryJob(server, new Set(tree.map((pipeline) => pipeline.view.id)), stuck, options);
    noteWaiting(server, jobs, waiting, options.note);
    if (toPlay.length > 0) tree = pipelineTree(server, pipelineId);
    if (toPlay.length === 0 && tree.every((pipeline) => isOver(pipeline.view))) return tree;
    if (agentStopped && tree.some((pipeline) => pipeline.view.jobs.some((job) => job.status === 'pending'))) {
      throw new CiRunnerError('EXEC_RUNNER_STOPPED', "exec's runner stopped while jobs were still waiting for it; see the messages above (--log-level debug shows more)");
    }
    await nextChange(server, options.signal);
  }
}

/**
 * Until the server's state next changes (a job started, finished, was played…) or `signal` aborts;
 * at most TICK_MS, for what the server does not announce (the agent stopping on an error).
 */
async function nextChange(server: ReferenceServer, signal: AbortSignal): Promise<void> {
  let wake = (): void => undefined;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const unlisten = server.onChange(wake);
  const timer = setTimeout(wake, TICK_MS);
  signal.addEventListener('abort', wake, { once: true });
  try {
    if (!signal.aborted) await woken;
  } finally {
    unlisten();
    clearTimeout(timer);
    signal.removeEventListener('abort', wake);
  }
}

/** Says once per job that it waits for its resource group (GitLab's `waiting_for_resource`), and for which. */
function noteWaiting(server: ReferenceServer, jobs: PipelineView['jobs'], noted: Set<number>, note: (text: string) => void): void {
  for (const job of jobs) {
    if (job.status !== 'waiting_for_resource' || noted.has(job.id)) continue;
    noted.add(job.id);
    const group = server.getJob(job.id)?.resource_group;
    note(`job ${job.name} is waiting_for_resource: another job holds its resource group${group === undefined ? '' : ` (resource_group: ${group})`}`);
  }
}

/**
 * exec runs every job: a pending job's tags that its runner lacks are added to it. A job that even
 * then no runner can take (which would wait for ever) is failed, and the reason said.
 */
async function takeEveryJob(server: ReferenceServer, pipelines: ReadonlySet<number>, stuck: Set<number>, options: WaitOptions): Promise<void> {
  const unrunnable = server.unrunnableJobs().filter((entry) => pipelines.has(entry.pipelineId) && !stuck.has(entry.job.id));
  if (unrunnable.length === 0) return;
  const missing = unrunnable.flatMap((entry) => entry.tags).filter((tag) => !options.runner.tags.has(tag));
  if (missing.length > 0) {
    for (const tag of missing) options.runner.tags.add(tag);
    server.setRunnerTags(options.runner.token, [...options.runner.tags]);
  }
  for (const { job, reason } of server.unrunnableJobs().filter((entry) => pipelines.has(entry.pipelineId) && !stuck.has(entry.job.id))) {
    stuck.add(job.id);
    options.note(`job ${job.name} cannot run: ${reason}; it is failed rather than left waiting`);
    await server.failStuckJob(job.id, reason);
  }
}
