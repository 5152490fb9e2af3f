/**
 * A parsed pipeline: the subset of `.gitlab-ci.yml` the reference server runs (issue #2). Produced by
 * `parsePipeline` (pure, in this folder) and consumed by the server's pipeline state machine.
 */

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
}

export interface PipelineSpec {
  /** Stage names in order; only stages that have jobs matter for progression. */
  stages: string[];
  jobs: JobSpec[];
}
