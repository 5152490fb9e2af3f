/**
 * Queuing a pipeline: parse the YAML (`parsePipeline`), resolve the ref in the project's repository,
 * create one build per job and let stage processing make the first stage pending.
 */
import { CiRunnerError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { advancePipeline } from '../state/transitions.js';
import type { PipelineRecord } from '../state/store.js';
import type { PipelineSpec } from './spec.js';

export interface CreatePipelineRequest {
  project: string;
  ref?: string;
  config: string;
  variables?: Record<string, string>;
  /**
   * In-process callers only (`ci-runner exec`): sees the pipeline's jobs once the file has been read
   * (after rules decided which jobs exist) and returns the jobs to create. Not reachable over HTTP.
   */
  filterJobs?: (spec: PipelineSpec) => PipelineSpec;
}

/** Creates and queues a pipeline. Throws `PIPELINE_INVALID`, `PROJECT_NOT_FOUND` or `REF_NOT_FOUND`. */
export async function createPipeline(ctx: ServerContext, request: CreatePipelineRequest, signal?: AbortSignal): Promise<PipelineRecord> {
  // Loaded on first use (YAML parser, execa) so the server starts quickly.
  const [{ parsePipeline }, { previousSha, resolveRef }] = await Promise.all([import('./parse.js'), import('../git/refs.js')]);
  const parsed = parsePipeline(request.config);
  const spec = request.filterJobs ? request.filterJobs(parsed) : parsed;
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
  for (const job of spec.jobs) {
    const index = spec.stages.indexOf(job.stage);
    ctx.store.addBuild(pipeline, job, index >= 0 ? index : spec.stages.length);
  }
  ctx.logger.info({ pipelineId: pipeline.id, project: project.name, ref, jobs: spec.jobs.length }, 'pipeline created');
  advancePipeline(ctx, pipeline.id);
  return pipeline;
}
