/**
 * Wire types of the CI runner API v1 (`/ci/api/v1`), as docs/protocol-v1.md §4–§5 describe them, and the one
 * job model of the runner: `BuildPayload` is v1's E4 body as `parseBuildPayload` returns it, plus
 * optional fields only v4 fills (`parseJobPayload` in v4/payload.ts maps a v4 job onto it). The
 * executors, the trace, artifacts and cache read this model only, whichever API the job came by.
 * Nothing here does I/O.
 */

/** States a build can have on the server (docs/protocol-v1.md §6.1). */
export type BuildStatus =
  | 'created'
  | 'pending'
  | 'running'
  | 'success'
  | 'failed'
  | 'canceled'
  | 'skipped'
  | 'manual'
  /** A `when: delayed` job waiting for its `start_in` (GitLab 11.4+; the reference server's only). */
  | 'scheduled'
  /** A job of a `resource_group:` waiting for the group's resource (GitLab 12.7+; the reference server's only). */
  | 'waiting_for_resource';

/** States the runner reports in E5 (docs/protocol-v1.md §6.2). */
export type RunnerBuildState = 'running' | 'success' | 'failed';

/** Feature flags sent in `info.features` (§4.10). */
export interface RunnerFeatures {
  variables: boolean;
  image: boolean;
  services: boolean;
  /** The artifacts capability: our client sends the intended key (§12 item 11)… */
  artifacts: boolean;
  /** …and duplicates it under the legacy client's key for fidelity. */
  features: boolean;
  cache: boolean;
}

/** The `info` object sent with E1–E5 (§4.10). */
export interface RunnerInfo {
  name?: string;
  version?: string;
  revision?: string;
  platform?: string;
  architecture?: string;
  executor?: string;
  features: RunnerFeatures;
}

/** E1 request body. */
export interface RegisterRunnerRequest {
  info: RunnerInfo;
  token: string;
  description?: string;
  /** Comma-separated, as v1 sends it (§12 item 16). */
  tag_list?: string;
  run_untagged: boolean;
  locked?: boolean;
}

/** E1 `201` body. */
export interface RegisterRunnerResponse {
  id: number;
  token: string;
}

/** One entry of the build payload's `variables` (§5.2). */
export interface BuildVariable {
  key: string;
  value: string;
  public: boolean;
  /** Runner-side only: write the value to a file and export its path. */
  file?: boolean;
  /**
   * Replace the value by `[MASKED]` in the trace (v4's `masked`). Absent (v1): a variable that is not
   * `public` is masked.
   */
  masked?: boolean;
  /** Export the value as it is, without `$VAR` expansion (v4's `raw`). */
  raw?: boolean;
}

/** `options.artifacts` (§5.4). */
export interface ArtifactsOptions {
  name?: string;
  paths?: string[];
  untracked?: boolean;
  when?: 'on_success' | 'on_failure' | 'always';
  expire_in?: string;
  /**
   * Globs left out of the archive (GitLab 13.1's `artifacts:exclude`). Not in API v1: the reference
   * server sends it and this runner applies it; GitLab Runner 1.x ignores unknown option keys.
   */
  exclude?: string[];
  /**
   * v4 only: what the entry is (`archive`, or a report type: `junit`, `dotenv`, …), sent as the
   * upload's `artifact_type`. Absent: the archive.
   */
  artifact_type?: string;
  /**
   * v4 only: how the entry is packed: `zip` (an archive), `gzip` (the files gzip-compressed, one
   * member each), `raw` (one file as it is). Absent: the runner's `artifacts_format`.
   */
  artifact_format?: 'zip' | 'gzip' | 'raw';
}

/** A docker image's pull policies, tried in order (`image:pull_policy`). */
export type ImagePullPolicy = 'always' | 'if-not-present' | 'never';

/**
 * An image's or a service's `executor_opts` (v4; `.gitlab-ci.yml`'s `docker:` and `kubernetes:`): the
 * user its containers run as and (docker) the platform of the image. Unexpanded (`$VAR` allowed).
 */
export interface ExecutorOpts {
  docker?: { platform?: string; user?: string };
  kubernetes?: { user?: string };
  /** Options GitLab Runner would refuse (`executor_opts.<key>` it does not know), for the job's failure. */
  unsupported?: string[];
}

/** A service as v4 sends it (`services[]`); v1 sends names only. */
export interface ServiceOptions {
  name: string;
  /** One alias, or several separated by commas or spaces. */
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  pull_policy?: ImagePullPolicy[];
  /** The service's own `variables:`, on top of the job's. */
  variables?: Array<{ key: string; value: string }>;
  executor_opts?: ExecutorOpts;
}

/** `options.cache` (§5.3). */
export interface CacheOptions {
  key?: string;
  paths?: string[];
  untracked?: boolean;
  /**
   * `pull` restores only, `push` saves only, `pull-push` (the default) both (GitLab 9.4's
   * `cache:policy`); it may name variables (`$CACHE_POLICY`), expanded by the runner, which fails a
   * job whose policy is none of the three then (src/cache/plan.ts). Not in API v1: sent by the
   * reference server, applied by this runner; GitLab Runner 1.x ignores it and does both.
   */
  policy?: string;
  /** Which job outcomes save the cache (GitLab 13.5's `cache:when`; default `on_success`). Not in API v1. */
  when?: 'on_success' | 'on_failure' | 'always';
  /** Keys restored from, in order, when `key` has no cache yet (GitLab 16.0). Not in API v1. */
  fallback_keys?: string[];
}

/** `options` of the build payload (§5.3). Unknown keys are kept (and ignored). */
export interface BuildOptions {
  image?: string;
  /** `image.entrypoint` when the server wrote the image as a map (§5.3 has only the string). */
  imageEntrypoint?: string[];
  /** `image.pull_policy` (v4; ours, not a v1 key): overrides the runner's `pull_policy` for the image. */
  imagePullPolicy?: ImagePullPolicy[];
  /** `image.executor_opts` (v4; ours, not a v1 key). */
  imageExecutorOpts?: ExecutorOpts;
  services?: string[];
  /** v4's services as objects (ours, not a v1 key); when present the docker executor uses these instead of `services`. */
  serviceSpecs?: ServiceOptions[];
  /** One archive as §5.4 has it, or v4's list: the archive and one entry per report, each uploaded on its own. */
  artifacts?: ArtifactsOptions | ArtifactsOptions[];
  /** One cache as §5.3 has it, or a list (GitLab 13.10's several caches; not in API v1). */
  cache?: CacheOptions | CacheOptions[];
  dependencies?: string[];
  after_script?: string[];
  /**
   * The user script as its entries (before_script then script), each one command even when it spans
   * lines. Not in API v1, whose `commands` joins them with newlines (and a runner splits it at each):
   * sent by the reference server when an entry spans lines; runners that do not know it use `commands`.
   */
  script?: string[];
  environment?: { name?: string; url?: string; action?: string };
  [key: string]: unknown;
}

/** `artifacts_file` of a build (§5.5). */
export interface ArtifactsFile {
  filename: string;
  /** Checked against the download when known (GitLab 8.x sends null for old artifacts). */
  size?: number;
}

/** One entry of `depends_on_builds` (§5.5). */
export interface DependencyBuild {
  id: number;
  ref: string;
  tag: boolean;
  sha: string;
  status: BuildStatus;
  name: string;
  token: string;
  stage: string;
  project_id: number;
  project_name: string;
  artifacts_file?: ArtifactsFile;
}

/** One entry of `credentials` (§5.6). */
export interface BuildCredential {
  type: string;
  url: string;
  username: string;
  password: string;
}

/**
 * The E4 `201` body (§5.1), as `parseBuildPayload` returns it: `null`s are gone and absent optional
 * fields hold their defaults (see build-payload.ts for what is accepted).
 */
export interface BuildPayload {
  id: number;
  ref: string;
  tag: boolean;
  sha: string;
  status: BuildStatus;
  name: string;
  token: string;
  stage: string;
  project_id: number;
  project_name: string;
  commands: string;
  repo_url: string;
  before_sha: string;
  allow_git_fetch: boolean;
  artifacts_expire_at?: string;
  artifacts_file?: ArtifactsFile;
  options: BuildOptions;
  timeout: number;
  variables: BuildVariable[];
  depends_on_builds: DependencyBuild[];
  credentials: BuildCredential[];
  /** v4's `git_info.refspecs`: what get_sources fetches (absent: the ref's branch or tag). */
  refspecs?: string[];
  /** v4's `git_info.depth`: the shallow depth when no GIT_DEPTH variable says otherwise (0 = full). */
  git_depth?: number;
  /** v4's `features.failure_reasons`: every reason the server accepts in a final update. */
  failure_reasons?: string[];
  /** v4's `features.token_mask_prefixes`: tokens starting with these are masked in the trace. */
  token_mask_prefixes?: string[];
  /** v4's `features.trace_sections`: the server folds `section_start`/`section_end` markers, so the runner writes them. */
  trace_sections?: boolean;
  /**
   * v4's `steps` but `after_script` (which is `options.after_script`), in the payload's order: `script`,
   * then `release` when the job has one. Absent (v1): one `script` step of `options.script`/`commands`.
   */
  steps?: JobStep[];
  /** v4's `run` was given and not empty: the job is CI steps (GitLab's step-runner), not a script. */
  run?: boolean;
  /** v4's `hooks`: scripts around get_sources (`pre_get_sources_script`, `post_get_sources_script`). */
  hooks?: JobHook[];
  /** v4's `job_info` queue figures, for the runner's metrics only. */
  queue_info?: QueueInfo;
  /**
   * v4: the job request's 201 body exactly as the coordinator sent it, for what must hand GitLab's own
   * response on (the custom executor's JOB_RESPONSE_FILE). Absent over v1.
   */
  response_body?: string;
}

/** One user step of a v4 job (docs/protocol-v4.md §6). */
export interface JobStep {
  /** `script`, `release`, …: its stage is `step_<name>`. Letters, digits and `_` only (checked). */
  name: string;
  script: string[];
  when: 'on_success' | 'on_failure' | 'always';
  allow_failure: boolean;
}

/** How the job waited in the server's queue (v4 `job_info`; docs/protocol-v4.md), for metrics. */
export interface QueueInfo {
  time_in_queue_seconds?: number;
  /** `project_jobs_running_on_instance_runners_count`: a bucket such as `"3"`, `"5+"`, `"+Inf"`. */
  project_jobs_running?: string;
  queue_size?: number;
  queue_depth?: number;
}

/** One of v4's `hooks` (GitLab's `hooks:` keyword): a name and its commands. */
export interface JobHook {
  name: string;
  script: string[];
}

/** E5 request body (§4.5). `trace`, when present, is the complete trace and replaces the server's copy. */
export interface UpdateBuildRequest {
  info: RunnerInfo;
  token: string;
  state?: RunnerBuildState;
  trace?: string;
}
