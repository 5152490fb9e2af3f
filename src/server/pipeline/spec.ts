/**
 * A parsed pipeline: the subset of `.gitlab-ci.yml` the reference server runs (issue #2). Produced by
 * `parsePipeline` (pure, in this folder) and consumed by the server's pipeline state machine.
 */
import type { JobConditions } from './conditions.js';
import type { RuleSpec } from './rules.js';

export type JobWhen = 'on_success' | 'on_failure' | 'always' | 'manual' | 'delayed';

export interface JobArtifactsSpec {
  name?: string;
  paths?: string[];
  untracked?: boolean;
  when?: 'on_success' | 'on_failure' | 'always';
  expire_in?: string;
}

export interface JobCacheSpec {
  key?: string;
  paths?: string[];
  untracked?: boolean;
}

export interface JobSpec {
  name: string;
  stage: string;
  /** `before_script` (job's, else global) followed by `script`, one command per entry. */
  commands: string[];
  afterScript: string[];
  /** Global then job variables, job winning; in definition order. */
  variables: Array<{ key: string; value: string }>;
  image?: string;
  services: string[];
  artifacts?: JobArtifactsSpec;
  cache?: JobCacheSpec;
  /** Absent: all earlier jobs' artifacts; `[]`: none. */
  dependencies?: string[];
  tags: string[];
  when: JobWhen;
  allowFailure: boolean;
  /** Seconds to wait with `when: delayed` (`start_in`). */
  startIn?: number;
  /** Seconds; absent means the server's default. */
  timeout?: number;
  /** A copy made by `parallel`: the job's name as written, and `CI_NODE_INDEX` / `CI_NODE_TOTAL`. */
  parallel?: { name: string; index: number; total: number };
}

export interface PipelineSpec {
  /** Stage names in order; only stages that have jobs matter for progression. */
  stages: string[];
  /** Every job the file defines, before rules choose (see `selectJobs`). */
  jobs: JobSpec[];
  /** The global `variables:` (already part of each job's `variables`), for `workflow: rules`. */
  variables: Array<{ key: string; value: string }>;
  /** `workflow: rules`, when the file has them. */
  workflow?: RuleSpec[];
  /** Each job's `rules` or `only`/`except`, by job name (every `parallel` copy has an entry). */
  conditions: Record<string, JobConditions>;
}
