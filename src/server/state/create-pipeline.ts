/**
 * Queuing a pipeline: resolve the ref in the project's repository, read the YAML with the commit's
 * files (`readPipeline`), let the rules choose the jobs (`selectJobs`), compute `cache:key:files`
 * keys at the commit, create one build per chosen job, cancel older pipelines of the ref that this
 * one makes redundant (`interruptible`), and let processing queue the first jobs. `planPipeline` is
 * the same without creating anything (`exec --list`).
 */
import { CiRunnerError } from '../../util/errors.js';
import type { ServerContext } from '../context.js';
import { cancelRedundantPipelines } from './auto-cancel.js';
import { advancePipeline } from './transitions.js';
import type { PipelineRecord, ProjectRecord, VariableFlags } from './store.js';
import { PIPELINE_SOURCES, type PipelineSource, type RuleContext } from '../../pipeline/context.js';
import type { PipelinePlan } from '../../pipeline/select.js';
import type { InputValues, PipelineSpec } from '../../pipeline/spec.js';

export interface CreatePipelineRequest {
  project: string;
  /** Branch, tag or sha; the project's default branch (HEAD) when absent, else `main`. */
  ref?: string;
  config: string;
  /** Given by the caller: they win over the file's variables, in rules and in jobs. */
  variables?: Record<string, string>;
  /** How some of `variables` go to jobs (masked, file, raw); absent: masked. */
  variableFlags?: Record<string, VariableFlags>;
  /** `CI_PIPELINE_SOURCE` for rules and jobs; `push` when absent. */
  source?: PipelineSource;
  /**
   * The project's default branch (`CI_DEFAULT_BRANCH`) when the caller knows it better than the
   * repository's HEAD (`exec` serves a snapshot whose HEAD is the branch being run).
   */
  defaultBranch?: string;
  /** A child pipeline's parent pipeline and trigger job (`state/bridges.ts`). */
  parent?: { pipelineId: number; bridgeId: number };
  /** Values for the file's own `spec: inputs:` (a child pipeline's `trigger: include: inputs:`). */
  inputs?: InputValues;
  /**
   * In-process callers that made the commit themselves (`exec`'s snapshot): what `ref` is, so the
   * server asks git nothing about it. Over HTTP the server always resolves the ref itself.
   */
  commit?: { sha: string; tag: boolean; beforeSha: string; message: string };
  /**
   * In-process callers only (`ci-runner exec`): sees the pipeline's jobs after the rules chose them
   * and returns the jobs to create. Not reachable over HTTP.
   */
  filterJobs?: (spec: PipelineSpec) => PipelineSpec;
}

/** What a pipeline for `request` would be, without creating it. */
export interface PipelinePreview {
  project: ProjectRecord;
  ref: string;
  tag: boolean;
  sha: string;
  beforeSha: string;
  source: PipelineSource;
  defaultBranch: string | undefined;
  variables: Record<string, string>;
  /** The file as read, every job in it (before rules). */
  spec: PipelineSpec;
  plan: PipelinePlan;
}

/**
 * Reads the pipeline for `request` and evaluates its rules. Throws `PIPELINE_INVALID` (every problem
 * in `problems`), `PROJECT_NOT_FOUND` or `REF_NOT_FOUND`.
 */
/**
 * The modules creating a pipeline needs, loaded on first use (YAML parser, execa) so the server starts
 * quickly; a caller that knows a pipeline comes (`exec`) loads them early, while it does other work.
 */
export function loadPipelineModules() {
  return Promise.all([
    import('../../pipeline/parse.js'),
    import('../../pipeline/select.js'),
    import('../git/refs.js'),
    import('../git/commit-files.js'),
    import('../../pipeline/predefined.js'),
    import('../../pipeline/cache-key-files.js'),
  ]);
}

export async function planPipeline(ctx: ServerContext, request: CreatePipelineRequest, signal?: AbortSignal): Promise<PipelinePreview> {
  const [{ readPipeline }, { selectJobs }, { previousSha, resolveRef, defaultBranch }, { gitCommitFiles, commitMessage }, { pipelineVariables, refSlug }] = await loadPipelineModules();
  const project = ctx.store.projectByName(request.project);
  if (!project) {
    const known = [...ctx.store.projects.values()].map((p) => p.name).join(', ') || 'none';
    throw new CiRunnerError('PROJECT_NOT_FOUND', `unknown project "${request.project}"; known projects: ${known}`);
  }
  const source = request.source ?? 'push';
  if (!(PIPELINE_SOURCES as readonly string[]).includes(source)) {
    throw new CiRunnerError('PIPELINE_INVALID', `source "${source}" is not a pipeline source (one of ${PIPELINE_SOURCES.join(', ')})`);
  }
  const head = request.defaultBranch ?? (await defaultBranch(project.path, signal));
  const ref = request.ref ?? head ?? 'main';
  let resolved: { sha: string; tag: boolean };
  let beforeSha: string;
  let message: string | undefined;
  try {
    if (request.commit) {
      resolved = { sha: request.commit.sha, tag: request.commit.tag };
      ({ beforeSha, message } = request.commit);
    } else {
      resolved = await resolveRef(project.path, ref, signal);
      // Two git processes at once: each costs start-up time, and neither needs the other.
      [beforeSha, message] = await Promise.all([previousSha(project.path, resolved.sha, signal), commitMessage(project.path, resolved.sha, signal)]);
    }
  } catch (error) {
    throw new CiRunnerError('REF_NOT_FOUND', `cannot resolve ref "${ref}" in ${project.name} (${project.path}): ${(error as Error).message}`, { cause: error });
  }
  const variables: Record<string, string> = {};
  for (const [key, value] of Object.entries(request.variables ?? {})) variables[key] = String(value);
  const facts = { projectPath: project.name, ref, refSlug: refSlug(ref), ...resolved, beforeSha, source, defaultBranch: head };
  const predefined = pipelineVariables({ ...facts, commitMessage: message });
  const files = gitCommitFiles(project.path, resolved.sha, signal);
  const context: RuleContext = { ...facts, projectPath: project.name, predefined, variables, files };
  const spec = await readPipeline(request.config, { files, variables: { ...predefined, ...variables }, context, ...(request.inputs ? { inputs: request.inputs } : {}) });
  const plan = await selectJobs(spec, context);
  return { project, ref, tag: resolved.tag, sha: resolved.sha, beforeSha, source, defaultBranch: head, variables, spec, plan };
}

/**
 * Creates and queues a pipeline. Throws what `planPipeline` throws, and `PIPELINE_FILTERED` when
 * `workflow: rules` or the jobs' rules leave nothing to run (GitLab creates no pipeline then either).
 */
export async function createPipeline(ctx: ServerContext, request: CreatePipelineRequest, signal?: AbortSignal): Promise<PipelineRecord> {
  const preview = await planPipeline(ctx, request, signal);
  const { project, ref } = preview;
  const plan = request.filterJobs ? filtered(preview, request.filterJobs) : preview.plan;
  if (!plan.run) {
    throw new CiRunnerError('PIPELINE_FILTERED', `the pipeline for ${ref} was filtered out by workflow: rules (${plan.workflow}); nothing was created`);
  }
  if (plan.jobs.length === 0) {
    throw new CiRunnerError(
      'PIPELINE_FILTERED',
      `no job runs for ${ref} (source ${preview.source}): the rules, only or except of every job leave it out; nothing was created`,
    );
  }
  const [{ resolveCacheKeys }, { notAppliedLines }] = await Promise.all([import('../../pipeline/cache-key-files.js'), import('../../pipeline/keyword-notes.js')]);
  const notApplied = notAppliedLines(preview.spec.notApplied ?? [], plan.jobs);
  const jobs = await resolveCacheKeys(plan.jobs, project.path, preview.sha, signal);
  const pipeline = ctx.store.addPipeline({
    projectId: project.id,
    ref,
    tag: preview.tag,
    sha: preview.sha,
    beforeSha: preview.beforeSha,
    variables: preview.variables,
    ...(request.variableFlags ? { variableFlags: request.variableFlags } : {}),
    stages: plan.stages,
    source: preview.source,
    ...(preview.defaultBranch === undefined ? {} : { defaultBranch: preview.defaultBranch }),
    workflow: plan.workflow,
    outcomes: plan.outcomes,
    ...(request.parent ? { parent: { ...request.parent } } : {}),
    ...(plan.name !== undefined ? { name: plan.name } : {}),
    ...(plan.autoCancel !== undefined ? { autoCancel: { ...plan.autoCancel } } : {}),
    ...(notApplied.length > 0 ? { notApplied } : {}),
  });
  for (const line of notApplied) ctx.logger.info({ pipelineId: pipeline.id }, `not applied locally: ${line}`);
  for (const job of jobs) {
    const index = plan.stages.indexOf(job.stage);
    ctx.store.addBuild(pipeline, job, index >= 0 ? index : plan.stages.length);
  }
  ctx.logger.info({ pipelineId: pipeline.id, project: project.name, ref, jobs: jobs.length }, 'pipeline created');
  // A child pipeline is part of its parent's run, not a newer one that makes it redundant.
  if (!request.parent) cancelRedundantPipelines(ctx, pipeline);
  advancePipeline(ctx, pipeline.id);
  return pipeline;
}

/**
 * The plan with only the jobs `filterJobs` keeps, out of those the rules chose. A need on a job the
 * caller left out is dropped: the caller asked for the job without it (`exec JOB` without `--needs`).
 */
function filtered(preview: PipelinePreview, filterJobs: (spec: PipelineSpec) => PipelineSpec): PipelinePlan {
  const { plan } = preview;
  const kept = filterJobs({ ...preview.spec, stages: plan.stages, jobs: plan.jobs });
  const names = new Set(kept.jobs.map((job) => job.name));
  const jobs = kept.jobs.map((job) =>
    job.needs === undefined || job.needs.every((need) => names.has(need.job)) ? job : { ...job, needs: job.needs.filter((need) => names.has(need.job)) },
  );
  return { ...plan, stages: kept.stages, jobs };
}
