/**
 * The build JSON of E4's 201 and E7's 201 (docs/protocol-v1.md §5), in the field order the real server
 * emitted. Only this module knows how a build record becomes wire JSON.
 */
import type { ArtifactsOptions, BuildOptions, BuildPayload, BuildVariable, CacheOptions, DependencyBuild } from '../../protocol/types.js';
import type { ServerContext } from '../context.js';
import { idTokenVariables } from '../state/id-tokens.js';
import { liveArtifacts } from '../state/artifacts.js';
import { environmentVariables } from '../../pipeline/environment.js';
import { jobVariables, pipelineVariables, refSlug } from '../../pipeline/predefined.js';
import type { BuildRecord, PipelineRecord, ProjectRecord, RunnerRecord } from '../state/store.js';
import { currentBuilds } from '../state/pipeline-progress.js';
import type { JobArtifactsSpec, JobCacheSpec } from '../../pipeline/spec.js';
import { expandVariables } from '../../pipeline/variables-expand.js';

export const SERVER_VERSION = '8.17.4';
export const SERVER_REVISION = 'ci-runner';

/** The clone URL with the build token as Basic credentials. */
export function repoUrl(baseUrl: string, project: ProjectRecord, token: string): string {
  const url = new URL(`${baseUrl}/${project.name}.git`);
  url.username = 'gitlab-ci-token';
  url.password = token;
  return url.toString();
}

export function projectParts(project: ProjectRecord): { namespace: string; path: string } {
  const slash = project.name.lastIndexOf('/');
  return { namespace: project.name.slice(0, Math.max(slash, 0)), path: project.name.slice(slash + 1) };
}

/** The payload as served: `options.image` may be the map `.gitlab-ci.yml` has, not only §5.3's string. */
export type ServedPayload = Omit<BuildPayload, 'options'> & { options: Omit<BuildOptions, 'image'> };

/** `scope`: the build's variables, for the values GitLab expands before the runner sees them. */
function buildOptions(build: BuildRecord, scope: Readonly<Record<string, string>>): ServedPayload['options'] {
  const job = build.job;
  const options: BuildOptions = {};
  if (job.services.length > 0) options.services = [...job.services];
  if (job.artifacts !== undefined) options.artifacts = artifactsOptions(job.artifacts);
  if (job.cache !== undefined && job.cache.length > 0) {
    const caches = job.cache.map((entry) => cacheOptions(entry, scope));
    // One cache as §5.3's map, which every runner reads; several as GitLab's list.
    options.cache = caches.length === 1 ? caches[0] : caches;
  }
  if (job.dependencies !== undefined) options.dependencies = [...job.dependencies];
  // `commands` joins the entries with newlines, and runners split it at each: an entry spanning
  // lines (a `|` block, a quoted string) would fall apart. Runners that know `script` run each entry
  // as one command, as GitLab does; it is sent only when some entry needs it.
  if (job.commands.some((command) => command.includes('\n'))) options.script = [...job.commands];
  if (job.afterScript.length > 0) options.after_script = [...job.afterScript];
  if (job.image === undefined) return options;
  // §5.3's string, unless the job replaces the entrypoint: then the map, as `.gitlab-ci.yml` has it
  // (this runner reads its name and entrypoint). Only then: a 1.x GitLab Runner cannot decode the map.
  return { image: job.imageEntrypoint ? { name: job.image, entrypoint: [...job.imageEntrypoint] } : job.image, ...options };
}

/** One cache as sent: `keyFiles` became `key` when the pipeline was created (cache-key-files.ts); a variable policy is expanded. */
function cacheOptions(entry: JobCacheSpec, scope: Readonly<Record<string, string>>): CacheOptions {
  const { keyFiles: _keyFiles, fallbackKeys, policy, ...cache } = entry;
  return {
    ...cache,
    ...(policy !== undefined ? { policy: expandVariables(policy, scope) as CacheOptions['policy'] } : {}),
    ...(fallbackKeys ? { fallback_keys: [...fallbackKeys] } : {}),
  };
}

/**
 * `artifacts:reports` reach the server inside the artifacts archive over API v1: the report files are
 * added to `paths`, so every runner (GitLab Runner 1.x included, which knows nothing of reports)
 * uploads them; the server reads dotenv back out of the archive (dotenv-report.ts), and the other
 * reports are kept there (API v4 uploads each on its own, `state/reports.ts`). `reports` itself is
 * not sent: no v1 runner acts on it.
 */
function artifactsOptions(spec: JobArtifactsSpec): ArtifactsOptions {
  const { reports, ...artifacts } = spec;
  const files = [...(reports?.dotenv ?? []), ...Object.values(reports?.typed ?? {}).flat()];
  const paths = [...(artifacts.paths ?? [])];
  for (const file of files) if (!paths.includes(file)) paths.push(file);
  return { ...artifacts, ...(paths.length > 0 ? { paths } : {}) };
}

/**
 * The builds whose artifacts (and dotenv variables) `build` receives: the jobs it needs (without
 * `artifacts: false`) when it has `needs`, else every job of the earlier stages — the latest build of
 * each, not the ones a retry replaced.
 */
export function dependencyBuilds(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord): BuildRecord[] {
  const current = currentBuilds(ctx.store, pipeline);
  const needs = build.job.needs;
  if (needs === undefined) return current.filter((other) => other.stageIndex < build.stageIndex);
  const wanted = new Set(needs.filter((need) => need.artifacts).map((need) => need.job));
  return current.filter((other) => wanted.has(other.job.name));
}

/** Dotenv variables of the dependencies whose artifacts the job downloads (`dependencies:` filters). */
function dotenvVariables(build: BuildRecord, dependencies: readonly BuildRecord[]): JobVariable[] {
  const filter = build.job.dependencies;
  return dependencies
    .filter((dep) => filter === undefined || filter.includes(dep.job.name))
    // Public, as on GitLab: a dotenv report is job output, not a secret (it is not masked in traces).
    .flatMap((dep) => (dep.dotenv ?? []).map((variable) => ({ key: variable.key, value: variable.value, public: true })));
}

/** A variable of a job before either API's payload shapes it: `masked`, `file`, `raw` as API v4 has them. */
export interface JobVariable {
  key: string;
  value: string;
  public: boolean;
  masked?: boolean;
  file?: boolean;
  raw?: boolean;
}

/**
 * The job's own variables (global and job `variables:`), then its dependencies' dotenv variables,
 * then the pipeline's (given with the request; secrets, masked unless the request said otherwise) —
 * GitLab's precedence, the later winning.
 */
export function ownVariables(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord): JobVariable[] {
  const own: JobVariable[] = build.job.variables.map((variable) => ({ key: variable.key, value: variable.value, public: true, ...(variable.raw ? { raw: true } : {}) }));
  own.push(...dotenvVariables(build, dependencyBuilds(ctx, build, pipeline)));
  for (const [key, value] of Object.entries(pipeline.variables)) {
    const flags = pipeline.variableFlags?.[key];
    own.push({ key, value, public: false, masked: flags?.masked ?? true, ...(flags?.file ? { file: true } : {}), ...(flags?.raw ? { raw: true } : {}) });
  }
  return own;
}

/**
 * `id_tokens:` — JWTs this server signs (state/id-tokens.ts), their `aud` expanded with `others`, the
 * job's other variables: secrets, masked, taken literally.
 */
export function idTokenJobVariables(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, others: readonly JobVariable[]): JobVariable[] {
  return idTokenVariables(ctx, build, pipeline, project, others).map(([key, value]) => ({ key, value, public: false, masked: true, raw: true }));
}

function variables(ctx: ServerContext, build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord, runner: RunnerRecord | undefined): BuildVariable[] {
  const pub = (key: string, value: string): BuildVariable => ({ key, value, public: true });
  const { namespace, path } = projectParts(project);
  const list: BuildVariable[] = [
    pub('CI', 'true'),
    pub('GITLAB_CI', 'true'),
    pub('CI_BUILD_ID', String(build.id)),
    { key: 'CI_BUILD_TOKEN', value: build.token, public: false },
    pub('CI_BUILD_REF', pipeline.sha),
    pub('CI_BUILD_BEFORE_SHA', pipeline.beforeSha),
    pub('CI_BUILD_REF_NAME', pipeline.ref),
    pub('CI_BUILD_REF_SLUG', refSlug(pipeline.ref)),
    pub('CI_BUILD_NAME', build.job.name),
    pub('CI_BUILD_STAGE', build.job.stage),
    pub('CI_SERVER_NAME', 'GitLab'),
    pub('CI_SERVER_VERSION', SERVER_VERSION),
    pub('CI_SERVER_REVISION', SERVER_REVISION),
  ];
  if (pipeline.tag) list.push(pub('CI_BUILD_TAG', pipeline.ref));
  if (build.job.when === 'manual') list.push(pub('CI_BUILD_MANUAL', 'true'));
  list.push(
    pub('CI_PROJECT_ID', String(project.id)),
    pub('CI_PROJECT_NAME', path),
    pub('CI_PROJECT_PATH', project.name),
    pub('CI_PROJECT_NAMESPACE', namespace),
    pub('CI_PROJECT_URL', `${ctx.baseUrl()}/${project.name}`),
    pub('CI_PIPELINE_ID', String(pipeline.id)),
  );
  if (runner) {
    list.push(
      pub('CI_RUNNER_ID', String(runner.id)),
      pub('CI_RUNNER_DESCRIPTION', runner.description),
      pub('CI_RUNNER_TAGS', runner.tags.join(', ')),
    );
  }
  list.push(...newerVariables(build, pipeline, project).map(([key, value]) => pub(key, value)));
  const jobOwn = ownVariables(ctx, build, pipeline);
  // Predefined like the names above, but made from the environment's name as the job's variables expand it.
  const environment = build.job.environment;
  if (environment) list.push(...environmentVariables(environment, Object.fromEntries([...list, ...jobOwn].map((v) => [v.key, v.value]))).map(([key, value]) => pub(key, value)));
  jobOwn.push(...idTokenJobVariables(ctx, build, pipeline, project, [...list, ...jobOwn]));
  // API v1 has no `raw` or `masked`: a raw value goes with its `$` doubled; the runner masks every
  // value that is not public.
  const own: BuildVariable[] = jobOwn.map((variable) => ({
    key: variable.key,
    value: variable.raw ? literal(variable.value) : variable.value,
    public: variable.public,
    ...(variable.file ? { file: true } : {}),
  }));
  return [...list, ...own];
}

/**
 * A value the runner must not expand (`expand: false`): runners expand `$VAR` in every value once and
 * turn `$$` into `$`, so each `$` is sent doubled.
 */
export function literal(value: string): string {
  return value.replace(/\$/g, () => '$$');
}

/** The GitLab-era predefined variables of `build` (`CI_COMMIT_*`, `CI_PIPELINE_SOURCE`, `CI_JOB_NAME`, `CI_NODE_INDEX`, …). */
export function gitlabVariables(build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord): Array<[string, string]> {
  const pipelineWide = pipelineVariables({
    projectPath: project.name,
    ref: pipeline.ref,
    refSlug: refSlug(pipeline.ref),
    tag: pipeline.tag,
    sha: pipeline.sha,
    beforeSha: pipeline.beforeSha,
    source: pipeline.source ?? 'push',
    defaultBranch: pipeline.defaultBranch,
  });
  const named = pipeline.name === undefined ? {} : { CI_PIPELINE_NAME: pipeline.name };
  return Object.entries({ ...pipelineWide, ...named, ...jobVariables(build.job) });
}

/** The GitLab-era names rules are written with (`CI_COMMIT_BRANCH`, `CI_NODE_INDEX`, …) beside the 8.x ones above. */
function newerVariables(build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord): Array<[string, string]> {
  const sent = new Set(['CI', 'GITLAB_CI', 'CI_PROJECT_PATH', 'CI_PROJECT_NAME', 'CI_PROJECT_NAMESPACE']);
  return gitlabVariables(build, pipeline, project).filter(([key]) => !sent.has(key));
}

/** The fields a build and its `depends_on_builds` entries share (§5.1, §5.5). */
function buildSummary(build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord): Omit<DependencyBuild, 'artifacts_file'> {
  return {
    id: build.id,
    ref: pipeline.ref,
    tag: pipeline.tag,
    sha: pipeline.sha,
    status: build.status,
    name: build.job.name,
    token: build.token,
    stage: build.job.stage,
    project_id: project.id,
    project_name: projectParts(project).path,
  };
}

function dependency(build: BuildRecord, pipeline: PipelineRecord, project: ProjectRecord): DependencyBuild {
  const artifacts = liveArtifacts(build);
  return {
    ...buildSummary(build, pipeline, project),
    ...(artifacts ? { artifacts_file: { filename: artifacts.filename, size: artifacts.size } } : {}),
  };
}

/** The §5 build object for `build` as its runner sees it. */
export function buildPayload(ctx: ServerContext, build: BuildRecord): ServedPayload {
  const pipeline = ctx.store.pipelines.get(build.pipelineId);
  const project = ctx.store.projects.get(build.projectId);
  if (!pipeline || !project) throw new Error(`build ${build.id} lost its pipeline or project`);
  const runner = build.runnerId === null ? undefined : ctx.store.runners.get(build.runnerId);
  const artifacts = liveArtifacts(build);
  const earlier = dependencyBuilds(ctx, build, pipeline);
  const list = variables(ctx, build, pipeline, project, runner);
  return {
    ...buildSummary(build, pipeline, project),
    commands: build.job.commands.join('\n'),
    repo_url: repoUrl(ctx.baseUrl(), project, build.token),
    before_sha: pipeline.beforeSha,
    allow_git_fetch: true,
    ...(artifacts
      ? {
          artifacts_file: { filename: artifacts.filename, size: artifacts.size },
          ...(artifacts.expireAt ? { artifacts_expire_at: artifacts.expireAt.toISOString() } : {}),
        }
      : {}),
    options: buildOptions(build, Object.fromEntries(list.map((variable) => [variable.key, variable.value]))),
    timeout: build.job.timeout ?? ctx.settings.defaultJobTimeout,
    variables: list,
    depends_on_builds: earlier.map((other) => dependency(other, pipeline, project)),
    credentials: [],
  };
}
