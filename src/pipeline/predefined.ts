/**
 * Predefined variables of the GitLab era that rules are written against (`$CI_COMMIT_BRANCH`,
 * `$CI_PIPELINE_SOURCE`, …). The same names go to jobs beside the 8.x `CI_BUILD_*` ones
 * (`server/api/payload.ts`), so a script and a rule see the same values.
 */

/** `CI_COMMIT_REF_SLUG` (8.x: `CI_BUILD_REF_SLUG`): lower-cased, non-alphanumerics to `-`, at most 63 bytes, no edge dashes. */
export function refSlug(ref: string): string {
  return ref
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '-')
    .slice(0, 63)
    .replace(/^-+|-+$/g, '');
}

export interface PipelineFacts {
  /** `group/project`. */
  projectPath: string;
  ref: string;
  /** `refSlug(ref)` (`CI_COMMIT_REF_SLUG`). */
  refSlug: string;
  tag: boolean;
  sha: string;
  beforeSha: string;
  source: string;
  defaultBranch?: string | undefined;
  commitMessage?: string | undefined;
}

/** The pipeline-wide predefined variables (no job's). */
export function pipelineVariables(facts: PipelineFacts): Record<string, string> {
  const slash = facts.projectPath.lastIndexOf('/');
  const variables: Record<string, string> = {
    CI: 'true',
    GITLAB_CI: 'true',
    CI_PIPELINE_SOURCE: facts.source,
    CI_COMMIT_SHA: facts.sha,
    CI_COMMIT_SHORT_SHA: facts.sha.slice(0, 8),
    CI_COMMIT_BEFORE_SHA: facts.beforeSha,
    CI_COMMIT_REF_NAME: facts.ref,
    CI_COMMIT_REF_SLUG: facts.refSlug,
    CI_PROJECT_PATH: facts.projectPath,
    CI_PROJECT_NAME: facts.projectPath.slice(slash + 1),
    CI_PROJECT_NAMESPACE: facts.projectPath.slice(0, Math.max(slash, 0)),
  };
  // GitLab sets exactly one of these: a tag pipeline has no branch.
  if (facts.tag) variables.CI_COMMIT_TAG = facts.ref;
  else variables.CI_COMMIT_BRANCH = facts.ref;
  if (facts.defaultBranch !== undefined) variables.CI_DEFAULT_BRANCH = facts.defaultBranch;
  if (facts.commitMessage !== undefined) {
    variables.CI_COMMIT_MESSAGE = facts.commitMessage;
    variables.CI_COMMIT_TITLE = facts.commitMessage.split('\n')[0] ?? '';
  }
  return variables;
}

/** A job's own predefined variables: its name and stage, and its place among `parallel` copies. */
export function jobVariables(job: { name: string; stage: string; parallel?: { index: number; total: number } }): Record<string, string> {
  const variables: Record<string, string> = { CI_JOB_NAME: job.name, CI_JOB_STAGE: job.stage };
  if (job.parallel) {
    variables.CI_NODE_INDEX = String(job.parallel.index);
    variables.CI_NODE_TOTAL = String(job.parallel.total);
  }
  return variables;
}
