/**
 * What the web page shows, as JSON. Nothing secret ever leaves here: variables go out by name only,
 * and neither build, runner nor project tokens are included.
 */
import type { ServerContext } from '../context.js';
import { pipelineStatus } from '../state/pipeline-progress.js';
import { isFinished } from '../state/composite-status.js';
import type { BuildRecord, PipelineRecord, RunnerRecord } from '../state/store.js';
import { shownStatus } from '../state/transitions.js';
import { runnerSummary } from '../runner-admin.js';

/** Newest first, this many per page. */
export const PIPELINES_PER_PAGE = 50;

const CANCELABLE = new Set(['created', 'waiting_for_resource', 'pending', 'running', 'manual']);
const RETRYABLE = new Set(['success', 'failed', 'canceled']);

function iso(date: Date | null): string | null {
  return date?.toISOString() ?? null;
}

/** Seconds between two dates (to now when `to` is null), or null when `from` is. */
function seconds(from: Date | null, to: Date | null): number | null {
  if (!from) return null;
  return Math.max(0, ((to ?? new Date()).getTime() - from.getTime()) / 1000);
}

function runnerRef(ctx: ServerContext, id: number | null): { id: number; description: string } | null {
  if (id === null) return null;
  const runner = ctx.store.runners.get(id);
  return { id, description: runner?.description ?? `#${id} (deleted)` };
}

function jobSummary(ctx: ServerContext, build: BuildRecord) {
  return {
    id: build.id,
    name: build.job.name,
    stage: build.job.stage,
    status: shownStatus(build),
    allow_failure: build.job.allowFailure,
    when: build.job.when,
    runner: runnerRef(ctx, build.runnerId),
    started_at: iso(build.startedAt),
    finished_at: iso(build.finishedAt),
    duration: seconds(build.startedAt, build.finishedAt),
  };
}

function pipelineTimes(builds: BuildRecord[]): { started: Date | null; finished: Date | null } {
  const starts = builds.map((b) => b.startedAt).filter((d): d is Date => d !== null);
  const started = starts.length ? new Date(Math.min(...starts.map((d) => d.getTime()))) : null;
  const done = builds.every((b) => isFinished(b.status) || b.status === 'manual');
  const ends = builds.map((b) => b.finishedAt).filter((d): d is Date => d !== null);
  const finished = done && ends.length ? new Date(Math.max(...ends.map((d) => d.getTime()))) : null;
  return { started, finished };
}

function pipelineSummary(ctx: ServerContext, pipeline: PipelineRecord) {
  // A retried build stays in the store (its log and artifacts) but the pipeline shows its latest attempt.
  const builds = ctx.store.pipelineBuilds(pipeline).filter((b) => !b.retried);
  const { started, finished } = pipelineTimes(builds);
  return {
    id: pipeline.id,
    project: ctx.store.projects.get(pipeline.projectId)?.name ?? null,
    ref: pipeline.ref,
    tag: pipeline.tag,
    sha: pipeline.sha,
    status: pipelineStatus(ctx.store, pipeline),
    created_at: iso(pipeline.createdAt),
    started_at: iso(started),
    finished_at: iso(finished),
    duration: seconds(started, finished),
    jobs: builds.map((b) => ({ id: b.id, name: b.job.name, stage: b.job.stage, status: shownStatus(b) })),
  };
}

/** The list page: newest first, `PIPELINES_PER_PAGE` older than `before` (all when absent). */
export function pipelinesPage(ctx: ServerContext, before: number | undefined) {
  const all = [...ctx.store.pipelines.values()].filter((p) => before === undefined || p.id < before).sort((a, b) => b.id - a.id);
  const page = all.slice(0, PIPELINES_PER_PAGE);
  return { pipelines: page.map((p) => pipelineSummary(ctx, p)), more: all.length > page.length };
}

/** One pipeline with its jobs grouped by stage, in stage order. */
export function pipelineDetail(ctx: ServerContext, pipeline: PipelineRecord) {
  // A retried build stays in the store (its log and artifacts) but the pipeline shows its latest attempt.
  const builds = ctx.store.pipelineBuilds(pipeline).filter((b) => !b.retried);
  const indexes = [...new Set(builds.map((b) => b.stageIndex))].sort((a, b) => a - b);
  return {
    ...pipelineSummary(ctx, pipeline),
    variables: Object.keys(pipeline.variables),
    name: pipeline.name ?? null,
    not_applied: pipeline.notApplied ?? [],
    stages: indexes.map((index) => {
      const jobs = builds.filter((b) => b.stageIndex === index);
      return { name: jobs[0]?.job.stage ?? String(index), jobs: jobs.map((b) => ({ ...jobSummary(ctx, b), actions: actionsFor(b) })) };
    }),
  };
}

function actionsFor(build: BuildRecord) {
  return { cancel: CANCELABLE.has(build.status), force_cancel: build.canceling === true, retry: RETRYABLE.has(build.status) && !build.retried, play: build.status === 'manual' || build.status === 'scheduled' };
}

/** One job: everything but its log and the values of its variables. */
export function jobDetail(ctx: ServerContext, build: BuildRecord) {
  const pipeline = ctx.store.pipelines.get(build.pipelineId);
  const artifacts = build.artifacts && (build.artifacts.expireAt === null || build.artifacts.expireAt.getTime() > Date.now()) ? build.artifacts : null;
  return {
    ...jobSummary(ctx, build),
    tags: build.job.tags,
    image: build.job.image ?? null,
    timeout: build.job.timeout ?? ctx.settings.defaultJobTimeout,
    created_at: iso(build.createdAt),
    queued_duration: seconds(build.createdAt, build.startedAt),
    pipeline: pipeline ? { id: pipeline.id, ref: pipeline.ref, sha: pipeline.sha, project: ctx.store.projects.get(pipeline.projectId)?.name ?? null } : null,
    variables: [
      ...build.job.variables.map((v) => ({ key: v.key, source: 'job' })),
      ...Object.keys(pipeline?.variables ?? {}).map((key) => ({ key, source: 'pipeline' })),
    ],
    trace_size: build.traceSize,
    artifacts: artifacts ? { filename: artifacts.filename, size: artifacts.size, expire_at: iso(artifacts.expireAt) } : null,
    actions: actionsFor(build),
    coverage: build.coverage ?? null,
    tests: build.tests ? { passed: build.tests.passed, failed: build.tests.failed, skipped: build.tests.skipped, failed_names: build.tests.failedNames } : null,
    reports: (build.reports ?? []).map(({ type, filename, size }) => ({ type, filename, size })),
    resource_group: build.job.resourceGroup ?? null,
  };
}

export function runnerDetail(ctx: ServerContext, runner: RunnerRecord) {
  return {
    ...runnerSummary(ctx, runner),
    name: runner.info.name ?? null,
    version: runner.info.version ?? null,
    platform: runner.info.platform ?? null,
    architecture: runner.info.architecture ?? null,
    executor: runner.info.executor ?? null,
    managers: (runner.managers ?? []).map((m) => ({ system_id: m.systemId, version: m.info.version ?? null, platform: m.info.platform ?? null, contacted_at: iso(m.contactedAt) })),
  };
}
