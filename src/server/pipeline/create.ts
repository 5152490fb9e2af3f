/**
 * Queuing a pipeline: parse the YAML (`parsePipeline`), resolve the ref in the project's repository,
 * compute `cache:key:files` keys at its commit, create one build per job, cancel older pipelines of
 * the ref that this one makes redundant (`interruptible`), and let processing queue the first jobs.
 */
import { CiRunnerError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { cancelRedundantPipelines } from '../state/auto-cancel.js';
import { advancePipeline } from '../state/transitions.js';
import type { PipelineRecord } from '../state/store.js';

export interface CreatePipelineRequest {
  project: string;
  ref?: string;
  config: string;
  variables?: Record<string, string>;
}

/** Creates and queues a pipeline. Throws `PIPELINE_INVALID`, `PROJECT_NOT_FOUND` or `REF_NOT_FOUND`. */
export async function createPipeline(ctx: ServerContext, request: CreatePipelineRequest, signal?: AbortSignal): Promise<PipelineRecord> {
  // Loaded on first use (YAML parser, execa) so the server starts quickly.
  const [{ parsePipeline }, { previousSha, resolveRef }, { resolveCacheKeys }] = await Promise.all([
    import('./parse.js'),
    import('../git/refs.js'),
    import('./cache-key-files.js'),
  ]);
  const spec = parsePipeline(request.config);
  const project = ctx.store.projectByName(request.project);
  if (!project) {
    const known = [...ctx.store.projects.values()].map((p) => p.name).join(', ') || 'none';
    throw new CiRunnerError('PROJECT_NOT_FOUND', `unknown project "${request.project}"; known projects: ${known}`);
  }
  const ref = request.ref ?? 'main';
  let resolved: { sha: string; tag: boolean };
  let beforeSha: string;
  try {
    resolved = await resolveRef(project.path, ref, signal);
    beforeSha = await previousSha(project.path, resolved.sha, signal);
  } catch (error) {
    throw new CiRunnerError('REF_NOT_FOUND', `cannot resolve ref "${ref}" in ${project.name} (${project.path}): ${(error as Error).message}`, { cause: error });
  }
  const jobs = await resolveCacheKeys(spec.jobs, project.path, resolved.sha, signal);
  const variables: Record<string, string> = {};
  for (const [key, value] of Object.entries(request.variables ?? {})) variables[key] = String(value);
  const pipeline = ctx.store.addPipeline({
    projectId: project.id,
    ref,
    tag: resolved.tag,
    sha: resolved.sha,
    beforeSha,
    variables,
    stages: spec.stages,
  });
  for (const job of jobs) {
    const index = spec.stages.indexOf(job.stage);
    ctx.store.addBuild(pipeline, job, index >= 0 ? index : spec.stages.length);
  }
  ctx.logger.info({ pipelineId: pipeline.id, project: project.name, ref, jobs: jobs.length }, 'pipeline created');
  cancelRedundantPipelines(ctx, pipeline);
  advancePipeline(ctx, pipeline.id);
  return pipeline;
}
