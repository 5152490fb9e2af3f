/**
 * A parsed pipeline: the subset of `.gitlab-ci.yml` the reference server runs (README, "The reference
 * server"). Produced by `parsePipeline` (pure, in this folder) and consumed by the server's pipeline
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
 * GitLab's failure reasons that `retry:when` can name and the server can tell apart over API v1
 * (see `server/state/job-outcome.ts` for how a failure gets its reason).
 */
export type RetryWhen =
  | 'always'
  | 'unknown_failure'
  | 'script_failure'
  | 'api_failure'
  | 'stuck_or_timeout_failure'
  | 'runner_system_failure'
  | 'job_execution_timeout';

export interface JobRetrySpec {
  /** 0–2 further attempts. */
  max: number;
  when: RetryWhen[];
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
  /** `reports: dotenv`: files whose `KEY=VALUE` lines become variables of later jobs. */
  reports?: { dotenv?: string[] };
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
  /** `key: { files, prefix }`: the key is computed from these files at the pipeline's commit. */
  keyFiles?: { files: string[]; prefix?: string };
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

/** A `services:` entry written as a map: what API v4 sends of it (API v1 sends names only). */
export interface JobServiceSpec {
  name: string;
  alias?: string;
  entrypoint?: string[];
  command?: string[];
  pullPolicy?: PullPolicy[];
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
  /** `run:`: CI steps (GitLab's step-runner) instead of a script, as written (a list of steps). */
  run?: unknown[];
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
}

/** `only:` or `except:` (`only-except.ts`). */
export interface RefPolicy {
  refs?: string[];
  variables?: ParsedExpression[];
  changes?: { paths: string[]; compareTo?: string };
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

export type TriggerInclude = { local: string } | { artifact: string; job: string } | { elsewhere: string };

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
