/**
 * A parsed pipeline: the subset of `.gitlab-ci.yml` the reference server runs (docs/server.md,
 * "Pipelines"). Produced by `parsePipeline` (pure, in this folder) and consumed by the server's pipeline
 * state machine. Every type of the parsed file is here, so the readers (`rules.ts`, `environment.ts`,
 * …) and this module import nothing of each other's but these types.
 */
import type { Expression } from './expression.js';

export type JobWhen = 'on_success' | 'on_failure' | 'always' | 'manual' | 'delayed';

/** One entry of `needs:`: the job's name and whether its artifacts are downloaded. */
export interface JobNeed {
  job: string;
  artifacts: boolean;
  /** GitLab's `optional: true`: a need on a job that is not in the pipeline is dropped, not refused. */
  optional: boolean;
  /**
   * `parallel: matrix:` of the need: which copies of a matrix job it means, one selector per entry
   * (each variable named must have one of the values listed). A value may be `$[[ matrix.NAME ]]`,
   * the needing copy's own value. Resolved to copy names when the file is read.
   */
  matrix?: Array<Record<string, string[]>>;
}

/**
 * GitLab's failure reasons that `retry:when` can name (its schema's `retry_errors`). The server tells
 * apart those its jobs can fail with (see `server/state/job-outcome.ts`); the others are accepted and
 * simply never match here.
 */
export type RetryWhen =
  | 'always'
  | 'unknown_failure'
  | 'script_failure'
  | 'api_failure'
  | 'stuck_or_timeout_failure'
  | 'runner_system_failure'
  | 'runner_unsupported'
  | 'stale_schedule'
  | 'job_execution_timeout'
  | 'archived_failure'
  | 'unmet_prerequisites'
  | 'scheduler_failure'
  | 'data_integrity_failure'
  | 'runner_provisioning_timeout';

export interface JobRetrySpec {
  /** 0–2 further attempts. */
  max: number;
  when: RetryWhen[];
  /** `retry:exit_codes`: a failure with one of these exit statuses is retried too. */
  exitCodes?: number[];
}

export type CachePolicy = 'pull' | 'push' | 'pull-push';

export interface JobArtifactsSpec {
  name?: string;
  paths?: string[];
  untracked?: boolean;
  when?: 'on_success' | 'on_failure' | 'always';
  expire_in?: string;
  /** Globs left out of the archive (runner side; see `protocol/types.ts`). */
  exclude?: string[];
  /**
   * `reports: dotenv`: files whose `KEY=VALUE` lines become variables of later jobs; `typed`: every
   * other report's files by GitLab's artifact type (`junit`, `cobertura`, `sast`, …).
   */
  reports?: { dotenv?: string[]; typed?: Record<string, string[]> };
}

export interface JobCacheSpec {
  key?: string;
  paths?: string[];
  untracked?: boolean;
  /** A `CachePolicy`, or a `$VARIABLE` the build's variables turn into one. */
  policy?: CachePolicy | string;
  /** Which outcomes of the job save the cache (default `on_success`). */
  when?: 'on_success' | 'on_failure' | 'always';
  /** Keys to restore from, in order, when there is no cache under `key` yet. */
  fallbackKeys?: string[];
  /**
   * `key: { files, prefix }`: the key is computed from these files at the pipeline's commit; with
   * `commits` (`files_commits:`) from the last commit that changed them.
   */
  keyFiles?: { files: string[]; prefix?: string; commits?: true };
}

/**
 * A variable of the file (global, job, rule or matrix). `raw`: written with `expand: false`, so a `$`
 * in its value is taken literally rather than as a reference to another variable.
 */
export interface SpecVariable {
  key: string;
  value: string;
  raw?: boolean;
}

/** `image:pull_policy` / `services:pull_policy`: when the runner pulls the image. */
export type PullPolicy = 'always' | 'if-not-present' | 'never';

/** An image's or service's `docker:` and `kubernetes:` options (the payload's `executor_opts`). */
export interface ExecutorOptsSpec {
  docker?: { platform?: string; user?: string };
  kubernetes?: { user?: string };
}

/** `hooks:`: commands GitLab hands the runner to run around get_sources. */
export interface HooksSpec {
  preGetSourcesScript?: string[];
}

/** A `services:` entry written as a map: what API v4 sends of it (API v1 sends names only). */
export interface JobServiceSpec {
  name: string;
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  pullPolicy?: PullPolicy[];
  /** The service's own `variables:`. */
  variables?: SpecVariable[];
  executorOpts?: ExecutorOptsSpec;
}

export interface JobSpec {
  name: string;
  stage: string;
  /** `before_script` (job's, else global) followed by `script`, one command per entry. */
  commands: string[];
  afterScript: string[];
  /** Global then job variables, job winning; in definition order. */
  variables: SpecVariable[];
  /** `inherit: variables:` — false: no global variable; a list: only those. Absent: all of them. */
  inheritVariables?: false | string[];
  image?: string;
  /** `image:entrypoint`, sent in the payload's image map. */
  imageEntrypoint?: string[];
  /** `image: { pull_policy }`. */
  imagePullPolicy?: PullPolicy[];
  /** `image: { docker: …, kubernetes: … }`. */
  imageExecutorOpts?: ExecutorOptsSpec;
  /** `hooks:` (the job's, else `default:`'s). */
  hooks?: HooksSpec;
  /** Image names of `services:`. */
  services: string[];
  /** `services:` as written, one per entry of `services`, when any entry is a map with more than a name. */
  serviceSpecs?: JobServiceSpec[];
  artifacts?: JobArtifactsSpec;
  /** One entry per cache (GitLab allows up to four). */
  cache?: JobCacheSpec[];
  /** Absent: all earlier jobs' artifacts; `[]`: none. */
  dependencies?: string[];
  tags: string[];
  when: JobWhen;
  allowFailure: boolean;
  /** `allow_failure: exit_codes`: the failures (by the script's exit status) that are allowed. */
  allowFailureExitCodes?: number[];
  /** `when: delayed` (`start_in`): seconds after the job's turn comes before it is queued. */
  startIn?: number;
  /** Seconds; absent means the server's default. */
  timeout?: number;
  /**
   * A copy made by `parallel`: the job's name as written, `CI_NODE_INDEX` / `CI_NODE_TOTAL`, and for a
   * `parallel: matrix:` copy its values by variable.
   */
  parallel?: { name: string; index: number; total: number; matrix?: Record<string, string> };
  /** Absent: stage order; `[]`: starts at once; else starts when these are done (a DAG). */
  needs?: JobNeed[];
  retry?: JobRetrySpec;
  interruptible?: boolean;
  /** The `coverage:` regex's source and flags (without the slashes). */
  coverage?: { source: string; flags: string };
  environment?: JobEnvironmentSpec;
  /** A trigger (bridge) job: no script, a downstream pipeline instead (`server/state/bridges.ts`). */
  trigger?: JobTriggerSpec;
  /** `release:`: the release the job makes after its script (`release.ts`). */
  release?: JobReleaseSpec;
  /** `resource_group:` as written (variables expanded per build): jobs of one group run one at a time. */
  resourceGroup?: string;
  /** `id_tokens:`: a JWT per variable, signed by the server (`server/state/id-tokens.ts`). */
  idTokens?: JobIdToken[];
  /** A Pages job (`pages:` or named `pages`): its site's directory, also in its artifacts' paths. */
  pages?: { publish: string };
}

/** One `release:assets:links` entry. */
export interface ReleaseLink {
  name: string;
  url: string;
  filepath?: string;
  direct_asset_path?: string;
  link_type?: string;
}

/** `release:` of a job, GitLab's keys. */
export interface JobReleaseSpec {
  tag_name: string;
  description: string;
  tag_message?: string;
  name?: string;
  ref?: string;
  released_at?: string;
  milestones?: string[];
  assets?: { links: ReleaseLink[] };
}

/** One keyword that is not applied, where it is used (`job X` for a job, by its name in the file) and why. */
export interface NotAppliedUse {
  key: string;
  reason: string;
  where: Array<{ label: string; job?: string }>;
}

/**
 * One entry of `id_tokens:`: the variable that holds the JWT and its audience (`aud`), one or a list
 * as written (the token's `aud` claim takes the same form), variables in it expanded per build.
 */
export interface JobIdToken {
  name: string;
  aud: string | string[];
}

/** `workflow: auto_cancel:` (and a workflow rule's). */
export interface AutoCancelSpec {
  /** Which jobs of older pipelines a new pipeline of the ref cancels; GitLab's default `conservative`. */
  onNewCommit?: 'conservative' | 'interruptible' | 'none';
  /** `all`: a failed job cancels the rest of its pipeline; GitLab's default `none`. */
  onJobFailure?: 'none' | 'all';
}

export interface PipelineSpec {
  /** Stage names in order; only stages that have jobs matter for progression. */
  stages: string[];
  /** Every job the file defines, before rules choose (see `selectJobs`). */
  jobs: JobSpec[];
  /** The global `variables:` (already part of each job's `variables`), for `workflow: rules`. */
  variables: SpecVariable[];
  /** What the file does that works but is likely a mistake (a key written twice), one line each. */
  warnings?: string[];
  /** `workflow: rules`, when the file has them. */
  workflow?: RuleSpec[];
  /** `workflow: name` as written (variables expanded when the pipeline is created). */
  name?: string;
  /** `workflow: auto_cancel`. */
  autoCancel?: AutoCancelSpec;
  /** Keys the file uses that a local run accepts but does not apply, and where (`keyword-notes.ts` makes the lines). */
  notApplied?: NotAppliedUse[];
  /** Each job's `rules` or `only`/`except`, by job name (every `parallel` copy has an entry). */
  conditions: Record<string, JobConditions>;
}

/** A rule's `when`: a job's, plus `never` (the job is not created). */
export type RuleWhen = JobWhen | 'never';

/** A condition written as text and parsed once. */
export interface ParsedExpression {
  text: string;
  expression: Expression;
}

/** One entry of `rules:` (a job's, `workflow:`'s or an `include:`'s), as `rules.ts` reads it. */
export interface RuleSpec {
  /** Position in the list (0-based), for outcomes such as `rules:1`. */
  index: number;
  if?: ParsedExpression;
  changes?: { paths: string[]; compareTo?: string };
  exists?: string[];
  when?: RuleWhen;
  allowFailure?: boolean;
  variables?: SpecVariable[];
  /** Seconds, with `when: delayed`. */
  startIn?: number;
  /** `needs` that replace the job's own when this rule matches (resolved to job names by `parseConfig`). */
  needs?: JobNeed[];
  /** A job rule's `interruptible`, replacing the job's own when the rule matches. */
  interruptible?: boolean;
  /** A workflow rule's `auto_cancel`, replacing `workflow: auto_cancel` when the rule matches. */
  autoCancel?: AutoCancelSpec;
}

/** `only:` or `except:` (`only-except.ts`). */
export interface RefPolicy {
  refs?: string[];
  variables?: ParsedExpression[];
  changes?: { paths: string[]; compareTo?: string };
  /** `kubernetes: active`: GitLab's Kubernetes integration, which this server never has. */
  kubernetes?: true;
}

/** How a job chooses its pipelines; a job has `rules` or `only`/`except`, never both. */
export interface JobConditions {
  rules?: RuleSpec[];
  only?: RefPolicy;
  except?: RefPolicy;
  /** The job's own `allow_failure`, when written: a rule's `when: manual` must not default it. */
  allowFailure?: boolean;
}

export type EnvironmentAction = 'start' | 'prepare' | 'stop' | 'verify' | 'access';
export type DeploymentTier = 'production' | 'staging' | 'testing' | 'development' | 'other';

/** `environment:` (`environment.ts`). */
export interface JobEnvironmentSpec {
  /** As written; variables are expanded per build. */
  name: string;
  url?: string;
  action: EnvironmentAction;
  tier?: DeploymentTier;
}

/** Values given to a file's `spec: inputs:` (`include: inputs:`, `trigger: include: inputs:`). */
export type InputValues = Record<string, unknown>;

export type TriggerInclude = { local: string; inputs?: InputValues } | { artifact: string; job: string; inputs?: InputValues } | { elsewhere: string };

/** `trigger:` (`trigger.ts`). */
export interface JobTriggerSpec {
  /** A child pipeline's files. */
  include?: TriggerInclude[];
  /** A multi-project pipeline's project (and branch). */
  project?: string;
  branch?: string;
  /** `strategy: depend`: the trigger job ends with the downstream pipeline's status. */
  depend: boolean;
  /** `forward:` — what the downstream pipeline gets: the job's variables (default yes), the pipeline's (default no). */
  forward: { yamlVariables: boolean; pipelineVariables: boolean };
}
