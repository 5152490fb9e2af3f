/**
 * Wire types of the CI runner API v1 (`/ci/api/v1`), as docs/protocol-v1.md §4–§5 describe them.
 * These are the shapes on the wire; nothing here does I/O.
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
  | 'scheduled';

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
}

/** `options.cache` (§5.3). */
export interface CacheOptions {
  key?: string;
  paths?: string[];
  untracked?: boolean;
  /**
   * `pull` restores only, `push` saves only, `pull-push` (the default) both (GitLab 9.4's
   * `cache:policy`). Not in API v1: sent by the reference server, applied by this runner; GitLab
   * Runner 1.x ignores it and does both.
   */
  policy?: 'pull' | 'push' | 'pull-push';
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
  services?: string[];
  artifacts?: ArtifactsOptions;
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
  size: number;
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
}

/** E5 request body (§4.5). `trace`, when present, is the complete trace and replaces the server's copy. */
export interface UpdateBuildRequest {
  info: RunnerInfo;
  token: string;
  state?: RunnerBuildState;
  trace?: string;
}
