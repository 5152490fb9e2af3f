/** Admin-facing views of pipelines and jobs (`PipelineView`, `JobView` in types.ts). */
import type { ServerContext } from './context.js';
import { pipelineStatus } from './state/pipeline-progress.js';
import { failureAllowed } from './state/composite-status.js';
import type { BuildRecord, PipelineRecord } from './state/store.js';
import { shownStatus } from './state/transitions.js';
import type { JobView, PipelineView } from './types.js';

export function jobView(build: BuildRecord): JobView {
  return {
    id: build.id,
    name: build.job.name,
    stage: build.job.stage,
    status: shownStatus(build),
    runner_id: build.runnerId,
    created_at: build.createdAt.toISOString(),
    started_at: build.startedAt?.toISOString() ?? null,
    finished_at: build.finishedAt?.toISOString() ?? null,
    trace_size: build.traceSize,
    artifacts: build.artifacts
      ? { filename: build.artifacts.filename, size: build.artifacts.size, expire_at: build.artifacts.expireAt?.toISOString() ?? null }
      : null,
    when: build.job.when,
    allow_failure: failureAllowed(build),
    ...(build.job.needs ? { needs: build.job.needs.map((need) => ({ ...need })) } : {}),
    ...(build.failureReason && build.status === 'failed' ? { failure_reason: build.failureReason } : {}),
    ...(build.exitCode !== undefined && build.status === 'failed' ? { exit_code: build.exitCode } : {}),
    ...(build.job.coverage ? { coverage: build.coverage ?? null } : {}),
    ...(build.retried ? { retried: true } : {}),
    attempt: build.attempt ?? 0,
    ...(build.scheduledAt ? { scheduled_at: build.scheduledAt.toISOString() } : {}),
    ...(build.dotenv ? { dotenv_variables: build.dotenv.map((variable) => variable.key) } : {}),
    ...(build.job.trigger ? { trigger: true } : {}),
    ...(build.reports ? { reports: build.reports.map(({ type, filename, size }) => ({ type, filename, size })) } : {}),
    ...(build.tests ? { tests: { total: build.tests.total, passed: build.tests.passed, failed: build.tests.failed, skipped: build.tests.skipped, failed_names: [...build.tests.failedNames] } } : {}),
    ...(build.job.resourceGroup !== undefined ? { resource_group: build.job.resourceGroup } : {}),
  };
}

export function pipelineView(ctx: ServerContext, pipeline: PipelineRecord): PipelineView {
  const outcomes = pipeline.outcomes ?? [];
  const reason = (name: string): string | null => outcomes.find((outcome) => outcome.name === name)?.reason ?? null;
  const builds = ctx.store.pipelineBuilds(pipeline);
  const retried = builds
    .filter((build) => build.retried)
    .map((build) => ({ id: build.id, name: build.job.name, stage: build.job.stage, status: build.status }));
  const downstream = [...ctx.store.pipelines.values()]
    .filter((other) => other.parent?.pipelineId === pipeline.id)
    .map((child) => ({ id: child.id, job_id: child.parent?.bridgeId ?? 0, job: ctx.store.buildById(child.parent?.bridgeId ?? 0)?.job.name ?? '', status: pipelineStatus(ctx.store, child) }));
  return {
    id: pipeline.id,
    status: pipelineStatus(ctx.store, pipeline),
    ...(pipeline.parent ? { parent: { id: pipeline.parent.pipelineId, job_id: pipeline.parent.bridgeId } } : {}),
    ...(downstream.length > 0 ? { downstream } : {}),
    source: pipeline.source ?? 'push',
    workflow: pipeline.workflow ?? 'no workflow rules',
    ...(pipeline.name !== undefined ? { name: pipeline.name } : {}),
    ...(pipeline.notApplied ? { not_applied: [...pipeline.notApplied] } : {}),
    jobs: builds.filter((build) => !build.retried).map((build) => ({
      id: build.id,
      name: build.job.name,
      stage: build.job.stage,
      status: shownStatus(build),
      when: build.job.when,
      allow_failure: failureAllowed(build),
      rule: reason(build.job.name),
      ...(build.job.needs ? { needs: build.job.needs.map((need) => ({ ...need })) } : {}),
    })),
    ...(retried.length > 0 ? { retried } : {}),
    excluded: outcomes.filter((outcome) => !outcome.included).map(({ name, stage, reason: rule }) => ({ name, stage, rule })),
  };
}
