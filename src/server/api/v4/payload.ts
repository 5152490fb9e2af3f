/**
 * The job JSON of API v4's `POST /jobs/request` 201 (docs/protocol-v4.md §4), made from the same build
 * record the v1 payload is made from. Only this module knows the v4 document's shape.
 */
import type { ServerContext } from '../../context.js';
import { environmentVariables } from '../../../pipeline/environment.js';
import { refSlug } from '../../../pipeline/predefined.js';
import { dependencyBuilds, gitlabVariables, idTokenJobVariables, ownVariables, projectParts, repoUrl, type JobVariable } from '../payload.js';
import type { ExecutorOptsSpec, JobArtifactsSpec, JobCacheSpec, JobServiceSpec } from '../../../pipeline/spec.js';
import { expandVariables } from '../../../pipeline/variables-expand.js';
import { liveArtifacts } from '../../state/artifacts.js';
import { FAILURE_REASONS } from '../../state/failure-reasons.js';
import { reportFileName } from '../../state/reports.js';
import { onProtectedRef } from '../../state/scheduler.js';
import { releaseScript } from './release-script.js';
import type { BuildRecord, PipelineRecord, ProjectRecord, RunnerRecord } from '../../state/store.js';

/** What `CI_SERVER_VERSION` says over API v4: the GitLab whose runner API this server follows (verify answers JSON, `glrt-` tokens). */
export const V4_SERVER_VERSION = '16.11.0';
const SERVER_REVISION = 'ci-runner';
/** GitLab's default `GIT_DEPTH` for new projects. */
const DEFAULT_GIT_DEPTH = 20;

export interface V4Variable {
  key: string;
  value: string;
  public: boolean;
  masked: boolean;
  file?: true;
  raw?: true;
}

interface V4Image {
  name: string;
  entrypoint?: string[];
  ports: [];
  pull_policy?: string[];
  /** `docker: { platform, user }`, `kubernetes: { user }`. */
  executor_opts?: Record<string, unknown>;
}

interface V4Artifact {
  name: string;
  untracked: boolean;
  paths: string[];
  exclude?: string[];
  when: string;
  expire_in: string | null;
  artifact_type: string;
  artifact_format: string;
}

/** The v4 job document (the keys this server sends; docs/protocol-v4.md §4). */
export interface V4JobPayload {
  id: number;
  token: string;
  allow_git_fetch: boolean;
  job_info: Record<string, unknown>;
  git_info: { repo_url: string; ref: string; sha: string; before_sha: string; ref_type: 'branch' | 'tag'; refspecs: string[]; depth: number; protected: boolean };
  runner_info: { timeout: number; runner_session_url: null };
  variables: V4Variable[];
  steps: Array<{ name: string; script: string[]; timeout: number; when: string; allow_failure: boolean }>;
  image: V4Image | null;
  services: Array<V4Image & { alias?: string; command?: string[]; variables?: Array<{ key: string; value: string }> }>;
  artifacts: V4Artifact[] | null;
  cache: Array<{ key: string; untracked: boolean; paths: string[]; policy: string; when: string; fallback_keys?: string[] }>;
  credentials: [];
  dependencies: Array<{ id: number; name: string; token: string; artifacts_file?: { filename: string; size: number } }>;
  features: { trace_sections: boolean; failure_reasons: string[]; token_mask_prefixes: string[] };
  /** GitLab's `hooks:` keyword: `[{ name: 'pre_get_sources_script', script: [...] }]`, absent without one. */
  hooks?: Array<{ name: string; script: string[] }>;
}

/** The job's timeout: its own or the server's default, capped by the runner's `maximum_timeout`. */
export function jobTimeout(ctx: ServerContext, build: BuildRecord, runner: RunnerRecord | undefined): number {
  const own = build.job.timeout ?? ctx.settings.defaultJobTimeout;
  return runner?.maximumTimeout !== undefined ? Math.min(own, runner.maximumTimeout) : own;
}

function predefined(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, runner: RunnerRecord | undefined): Array<[string, string]> {
  const base = ctx.baseUrl();
  const url = new URL(base);
  const [major, minor, patch] = V4_SERVER_VERSION.split('.');
  const list: Array<[string, string]> = [
    ['CI_SERVER', 'yes'],
    ['CI_SERVER_URL', base],
    ['CI_SERVER_HOST', url.hostname],
    ['CI_SERVER_PORT', url.port || (url.protocol === 'https:' ? '443' : '80')],
    ['CI_SERVER_PROTOCOL', url.protocol.replace(/:$/, '')],
    ['CI_SERVER_NAME', 'GitLab'],
    ['CI_SERVER_VERSION', V4_SERVER_VERSION],
    ['CI_SERVER_VERSION_MAJOR', major ?? ''],
    ['CI_SERVER_VERSION_MINOR', minor ?? ''],
    ['CI_SERVER_VERSION_PATCH', patch ?? ''],
    ['CI_SERVER_REVISION', SERVER_REVISION],
    ['CI_API_V4_URL', `${base}/api/v4`],
    ['CI_JOB_ID', String(build.id)],
    ['CI_JOB_URL', `${base}/jobs/${build.id}`],
    ['CI_JOB_TIMEOUT', String(jobTimeout(ctx, build, runner))],
    ['CI_PROJECT_ID', String(project.id)],
    ['CI_PROJECT_URL', `${base}/${project.name}`],
    ['CI_PROJECT_PATH_SLUG', refSlug(project.name)],
    ['CI_PROJECT_ROOT_NAMESPACE', project.name.split('/')[0] ?? ''],
    ['CI_PIPELINE_ID', String(pipeline.id)],
    ['CI_PIPELINE_IID', String(pipeline.id)],
    ['CI_PIPELINE_URL', `${base}/pipelines/${pipeline.id}`],
    ['CI_COMMIT_REF_PROTECTED', String(onProtectedRef(ctx.store, build))],
  ];
  if (build.job.when === 'manual') list.push(['CI_JOB_MANUAL', 'true']);
  if (runner) list.push(['CI_RUNNER_ID', String(runner.id)], ['CI_RUNNER_DESCRIPTION', runner.description], ['CI_RUNNER_TAGS', runner.tags.join(', ')]);
  return [...list, ...gitlabVariables(build, pipeline, project)];
}

/**
 * Every variable of the job: predefined (public), then the job token and clone URL (secrets), the
 * job's own, dotenv and pipeline variables (`ownVariables`), and the environment's. A runner that
 * did not announce `raw_variables` gets a raw value with its `$` doubled, which it turns back into one.
 */
function variables(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, runner: RunnerRecord | undefined): V4Variable[] {
  const pub = ([key, value]: [string, string]): V4Variable => ({ key, value, public: true, masked: false });
  const list: V4Variable[] = predefined(ctx, build, pipeline, project, runner).map(pub);
  list.push(
    { key: 'CI_JOB_TOKEN', value: build.token, public: false, masked: true },
    { key: 'CI_REPOSITORY_URL', value: repoUrl(ctx.baseUrl(), project, build.token), public: false, masked: false },
  );
  const rawSupported = runner?.features?.raw_variables === true;
  const jobOwn = ownVariables(ctx, build, pipeline);
  const environment = build.job.environment;
  if (environment) {
    const scope = Object.fromEntries([...list, ...jobOwn].map((v) => [v.key, v.value]));
    list.push(...environmentVariables(environment, scope).map(pub));
  }
  jobOwn.push(...idTokenJobVariables(ctx, build, pipeline, project, [...list, ...jobOwn]));
  return [...list, ...jobOwn.map((variable) => v4Variable(variable, rawSupported))];
}

function v4Variable(variable: JobVariable, rawSupported: boolean): V4Variable {
  const raw = variable.raw === true;
  return {
    key: variable.key,
    value: raw && !rawSupported ? variable.value.replace(/\$/g, () => '$$') : variable.value,
    public: variable.public,
    masked: variable.masked === true,
    ...(variable.file ? { file: true as const } : {}),
    ...(raw && rawSupported ? { raw: true as const } : {}),
  };
}

/** One `archive` entry for `artifacts:paths`/`untracked`, one per report (GitLab's file names and formats). */
function artifacts(spec: JobArtifactsSpec | undefined): V4Artifact[] | null {
  if (!spec) return null;
  const list: V4Artifact[] = [];
  const expireIn = spec.expire_in ?? null;
  const paths = spec.paths ?? [];
  if (paths.length > 0 || spec.untracked === true) {
    list.push({
      name: spec.name ?? 'artifacts',
      untracked: spec.untracked === true,
      paths: [...paths],
      ...(spec.exclude && spec.exclude.length > 0 ? { exclude: [...spec.exclude] } : {}),
      when: spec.when ?? 'on_success',
      expire_in: expireIn,
      artifact_type: 'archive',
      artifact_format: 'zip',
    });
  }
  const dotenv = spec.reports?.dotenv ?? [];
  if (dotenv.length > 0) {
    list.push({ name: '.env', untracked: false, paths: [...dotenv], when: 'always', expire_in: expireIn, artifact_type: 'dotenv', artifact_format: 'gzip' });
  }
  // GitLab sends each report as its own upload, `when: always` (a failed test run is when it matters).
  for (const [type, paths] of Object.entries(spec.reports?.typed ?? {})) {
    list.push({ name: reportFileName(type), untracked: false, paths: [...paths], when: 'always', expire_in: expireIn, artifact_type: type, artifact_format: 'gzip' });
  }
  return list.length > 0 ? list : null;
}

function cache(entry: JobCacheSpec, scope: Readonly<Record<string, string>>): V4JobPayload['cache'][number] {
  return {
    key: entry.key ?? 'default',
    untracked: entry.untracked === true,
    paths: [...(entry.paths ?? [])],
    policy: entry.policy !== undefined ? expandVariables(entry.policy, scope) : 'pull-push',
    when: entry.when ?? 'on_success',
    ...(entry.fallbackKeys ? { fallback_keys: [...entry.fallbackKeys] } : {}),
  };
}

/** `services[]` as objects, with what the file gave beyond the name (alias, entrypoint, command, pull_policy). */
function services(job: BuildRecord['job']): V4JobPayload['services'] {
  const specs: JobServiceSpec[] = job.serviceSpecs ?? job.services.map((name) => ({ name }));
  return specs.map((service) => ({
    name: service.name,
    ...(service.alias !== undefined ? { alias: service.alias } : {}),
    ...(service.entrypoint ? { entrypoint: [...service.entrypoint] } : {}),
    ...(service.command ? { command: [...service.command] } : {}),
    ports: [],
    ...(service.pullPolicy ? { pull_policy: [...service.pullPolicy] } : {}),
    ...(service.variables ? { variables: service.variables.map(({ key, value }) => ({ key, value })) } : {}),
    ...(service.executorOpts ? { executor_opts: executorOpts(service.executorOpts) } : {}),
  }));
}

/** `docker:` / `kubernetes:` of an image or service, as GitLab sends them (`executor_opts`). */
function executorOpts(opts: ExecutorOptsSpec): Record<string, unknown> {
  return JSON.parse(JSON.stringify(opts)) as Record<string, unknown>;
}

/**
 * Fetch refspecs (docs/protocol-v4.md §4 `git_info`): the pipeline's branch or tag when shallow,
 * else every branch and tag. This server keeps no `refs/pipelines/<id>`: it never writes into the
 * projects' repositories.
 */
function refspecs(pipeline: PipelineRecord, depth: number): string[] {
  if (depth === 0) return ['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'];
  return [pipeline.tag ? `+refs/tags/${pipeline.ref}:refs/tags/${pipeline.ref}` : `+refs/heads/${pipeline.ref}:refs/remotes/origin/${pipeline.ref}`];
}

/** `GIT_DEPTH` as the job's variables set it (the last one wins), else GitLab's default. */
function gitDepth(list: readonly V4Variable[]): number {
  const given = list.filter((variable) => variable.key === 'GIT_DEPTH').at(-1)?.value.trim();
  return given !== undefined && /^\d+$/.test(given) ? Number(given) : DEFAULT_GIT_DEPTH;
}

/** The v4 job document for `build` as its runner sees it. */
export function v4Payload(ctx: ServerContext, build: BuildRecord): V4JobPayload {
  const pipeline = ctx.store.pipelines.get(build.pipelineId);
  const project = ctx.store.projects.get(build.projectId);
  if (!pipeline || !project) throw new Error(`build ${build.id} lost its pipeline or project`);
  const runner = build.runnerId === null ? undefined : ctx.store.runners.get(build.runnerId);
  const list = variables(ctx, build, pipeline, project, runner);
  const scope = Object.fromEntries(list.map((variable) => [variable.key, variable.value]));
  const timeout = jobTimeout(ctx, build, runner);
  const depth = gitDepth(list);
  const job = build.job;
  const filter = job.dependencies;
  const dependencies = dependencyBuilds(ctx, build, pipeline).filter((dep) => filter === undefined || filter.includes(dep.job.name));
  return {
    id: build.id,
    token: build.token,
    allow_git_fetch: true,
    job_info: {
      id: build.id,
      name: job.name,
      stage: job.stage,
      project_id: project.id,
      project_name: projectParts(project).path,
      project_full_path: project.name,
      pipeline_id: pipeline.id,
      time_in_queue_seconds: build.startedAt ? Math.max(0, (build.startedAt.getTime() - build.createdAt.getTime()) / 1000) : 0,
    },
    git_info: {
      repo_url: repoUrl(ctx.baseUrl(), project, build.token),
      ref: pipeline.ref,
      sha: pipeline.sha,
      before_sha: pipeline.beforeSha,
      ref_type: pipeline.tag ? 'tag' : 'branch',
      refspecs: refspecs(pipeline, depth),
      depth,
      protected: onProtectedRef(ctx.store, build),
    },
    runner_info: { timeout, runner_session_url: null },
    variables: list,
    // GitLab's Ci::Build#steps: the script (before_script + script), the release, after_script.
    steps: [
      { name: 'script', script: [...job.commands], timeout, when: 'on_success', allow_failure: false },
      ...(job.release ? [{ name: 'release', script: releaseScript(job.release), timeout, when: 'on_success', allow_failure: false }] : []),
      ...(job.afterScript.length > 0 ? [{ name: 'after_script', script: [...job.afterScript], timeout, when: 'always', allow_failure: true }] : []),
    ],
    image: job.image === undefined ? null : {
      name: job.image,
      ...(job.imageEntrypoint ? { entrypoint: [...job.imageEntrypoint] } : {}),
      ports: [],
      ...(job.imagePullPolicy ? { pull_policy: [...job.imagePullPolicy] } : {}),
      ...(job.imageExecutorOpts ? { executor_opts: executorOpts(job.imageExecutorOpts) } : {}),
    },
    services: services(job),
    artifacts: artifacts(job.artifacts),
    cache: (job.cache ?? []).map((entry) => cache(entry, scope)),
    credentials: [],
    // Each dependency is downloaded with the running job's own token (GitLab ≥ 15.x), which the
    // download endpoint accepts for any job while the asking job runs.
    dependencies: dependencies.map((dep) => {
      const file = liveArtifacts(dep);
      return { id: dep.id, name: dep.job.name, token: build.token, ...(file ? { artifacts_file: { filename: file.filename, size: file.size } } : {}) };
    }),
    // What GitLab sends for an instance with its default personal access token prefix.
    features: { trace_sections: true, failure_reasons: [...FAILURE_REASONS], token_mask_prefixes: ['glpat-'] },
    ...(job.hooks?.preGetSourcesScript ? { hooks: [{ name: 'pre_get_sources_script', script: [...job.hooks.preGetSourcesScript] }] } : {}),
  };
}
