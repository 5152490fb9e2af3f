/**
 * What rules, `only`/`except` and `include` need to know about the commit a pipeline runs for. The
 * server fills it from git (`server/git/commit-files.ts`); tests and `exec` can pass their own.
 */

/** The files of the pipeline's commit. Paths are relative to the repository root, with `/`. */
export interface CommitFiles {
  /** Every file of the commit (for `exists` and wildcard includes). */
  paths(): Promise<readonly string[]>;
  /** A file's text, or undefined when the commit has no such file. */
  read(path: string): Promise<string | undefined>;
  /**
   * The files that differ between `base` (a sha, branch or tag) and the commit, or undefined when
   * `base` does not exist (then `changes` holds, as GitLab does for a new branch).
   */
  changedSince(base: string): Promise<readonly string[] | undefined>;
}

/** What started a pipeline (`CI_PIPELINE_SOURCE`). Admin and API pipelines default to `push`. */
export const PIPELINE_SOURCES = [
  'push',
  'web',
  'api',
  'trigger',
  'schedule',
  'pipeline',
  'parent_pipeline',
  'merge_request_event',
  'external_pull_request_event',
  'chat',
  'webide',
  'external',
] as const;
export type PipelineSource = (typeof PIPELINE_SOURCES)[number];

/** Everything a pipeline's rules are evaluated against. */
export interface RuleContext {
  ref: string;
  tag: boolean;
  sha: string;
  /** The previous commit (`CI_COMMIT_BEFORE_SHA`); 40 zeros when there is none. */
  beforeSha: string;
  source: PipelineSource;
  /** `CI_PROJECT_PATH`, for `only: [main@group/project]`. */
  projectPath: string;
  /** `CI_COMMIT_BRANCH`, `CI_PIPELINE_SOURCE`, … (`predefined.ts`). */
  predefined: Readonly<Record<string, string>>;
  /** Given with the request (admin API, `exec --variable`): they win over the file's variables. */
  variables: Readonly<Record<string, string>>;
  files: CommitFiles;
}
