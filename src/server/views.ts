/** Admin-facing views of pipelines and jobs (TEAM.md `PipelineView`, `JobView`). */
import type { ServerContext } from './context.js';
import { pipelineStatus } from './pipeline/process.js';
import type { BuildRecord, PipelineRecord } from './state/store.js';
import type { JobView, PipelineView } from './types.js';

export function jobView(build: BuildRecord): JobView {
  return {
    id: build.id,
    name: build.job.name,
    stage: build.job.stage,
    status: build.status,
    runner_id: build.runnerId,
    created_at: build.createdAt.toISOString(),
    started_at: build.startedAt?.toISOString() ?? null,
    finished_at: build.finishedAt?.toISOString() ?? null,
    trace_size: build.traceSize,
    artifacts: build.artifacts
      ? { filename: build.artifacts.filename, size: build.artifacts.size, expire_at: build.artifacts.expireAt?.toISOString() ?? null }
      : null,
  };
}

export function pipelineView(ctx: ServerContext, pipeline: PipelineRecord): PipelineView {
  const outcomes = pipeline.outcomes ?? [];
  const reason = (name: string): string | null => outcomes.find((outcome) => outcome.name === name)?.reason ?? null;
  return {
    id: pipeline.id,
    status: pipelineStatus(ctx.store, pipeline),
    source: pipeline.source ?? 'push',
    workflow: pipeline.workflow ?? 'no workflow rules',
    jobs: ctx.store.pipelineBuilds(pipeline).map((build) => ({
      id: build.id,
      name: build.job.name,
      stage: build.job.stage,
      status: build.status,
      when: build.job.when,
      allow_failure: build.job.allowFailure,
      rule: reason(build.job.name),
    })),
    excluded: outcomes.filter((outcome) => !outcome.included).map(({ name, stage, reason: rule }) => ({ name, stage, rule })),
  };
}
