/**
 * The job pod's labels and annotations: GitLab Runner 19's own (`project.runner.gitlab.com/id`,
 * `job.runner.gitlab.com/sha`, …, so selectors and dashboards written for it find the pod), the
 * runner's `pod_labels` and `pod_annotations` with the job's overwrites (values expanded against the
 * job's variables; a label value made a valid one as GitLab Runner makes it), and ci-runner's own
 * (labels.ts), which nothing overrides. A `pod_labels` key in GitLab Runner's or ci-runner's namespace
 * is not set, as GitLab Runner does not set it, and the job log says so.
 */
import { randomInt } from 'node:crypto';
import type { BuildPayload } from '../../protocol/types.js';
import { shortToken } from '../../util/short-token.js';
import { formatGoDuration } from '../../util/duration.js';
import type { ExportedVariable } from '../types.js';
import { LABEL_PREFIX } from './labels.js';

const GITLAB = 'runner.gitlab.com';
/** Keys in GitLab Runner's namespace, or ci-runner's. */
const PROTECTED = new RegExp(`^(?:(?:.*\\.)?${GITLAB.replace(/\./g, '\\.')}|${LABEL_PREFIX})(?:/|$)`, 'i');

/** GitLab Runner's `sanitizeLabel`: [A-Za-z0-9._-] only, alphanumeric at both ends, at most 63. */
export function sanitizeLabel(value: string): string {
  const trim = (s: string) => s.replace(/^[-_.]+|[-_.]+$/g, '');
  return trim(trim(value.replace(/[^A-Za-z0-9._-]/g, '_')).slice(0, 63));
}

/**
 * GitLab Runner's `ProjectUniqueName`: `runner-<short token>-project-<project id>-concurrent-<the job's
 * slot among the project's>` made a DNS label (lowercase, [a-z0-9-], at most 63).
 */
export function projectUniqueName(runnerToken: string, projectId: number, projectSlot: string): string {
  return `runner-${shortToken(runnerToken)}-project-${projectId}-concurrent-${projectSlot}`.toLowerCase().replace(/[^-a-z0-9]/g, '').replace(/^[^a-z0-9]+/, '').slice(0, 63);
}

/** A pod's name as GitLab Runner makes one: the project's unique name (cut to leave room) and 8 random characters. */
export function podName(uniqueName: string): string {
  const chars = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const suffix = Array.from({ length: 8 }, () => chars[randomInt(chars.length)]).join('');
  return `${uniqueName.slice(0, 63 - 8 - 1)}-${suffix}`;
}

export interface MetadataInput {
  build: BuildPayload;
  variables: readonly ExportedVariable[];
  runnerName: string;
  /** `projectUniqueName` of the job. */
  uniqueName: string;
  runnerToken: string;
  expand: (text: string) => string;
  /** `pod_labels` / `pod_annotations` with the job's overwrites. */
  podLabels: Readonly<Record<string, string>>;
  podAnnotations: Readonly<Record<string, string>>;
  /** ci-runner's own. */
  ours: { labels: Readonly<Record<string, string>>; annotations: Readonly<Record<string, string>> };
  log: (line: string) => void;
}

export function podMetadata(input: MetadataInput): { labels: Record<string, string>; annotations: Record<string, string> } {
  const { build } = input;
  const variable = (name: string): string => input.variables.findLast((v) => v.key === name)?.value ?? '';
  const labels: Record<string, string> = {
    pod: sanitizeLabel(input.uniqueName),
    [`project.${GITLAB}/id`]: String(build.project_id),
    [`project.${GITLAB}/namespace-id`]: sanitizeLabel(variable('CI_PROJECT_NAMESPACE_ID')),
    [`project.${GITLAB}/name`]: sanitizeLabel(build.project_name),
    [`project.${GITLAB}/namespace`]: sanitizeLabel(variable('CI_PROJECT_NAMESPACE')),
    [`project.${GITLAB}/root-namespace`]: sanitizeLabel(variable('CI_PROJECT_ROOT_NAMESPACE')),
    [`job.${GITLAB}/pod`]: sanitizeLabel(input.uniqueName),
    [`manager.${GITLAB}/name`]: sanitizeLabel(input.runnerName),
    [`manager.${GITLAB}/id-short`]: sanitizeLabel(shortToken(input.runnerToken)),
  };
  for (const [key, value] of Object.entries(input.podLabels)) {
    if (PROTECTED.test(key)) input.log(`not setting pod label "${key}", overwrite of labels in the "${key.startsWith(LABEL_PREFIX) ? LABEL_PREFIX : GITLAB}" namespace is not allowed`);
    else labels[key] = sanitizeLabel(input.expand(value));
  }
  const annotations: Record<string, string> = {
    [`job.${GITLAB}/id`]: String(build.id),
    [`job.${GITLAB}/url`]: variable('CI_JOB_URL'),
    [`job.${GITLAB}/sha`]: build.sha,
    [`job.${GITLAB}/before_sha`]: build.before_sha,
    [`job.${GITLAB}/ref`]: build.ref,
    [`job.${GITLAB}/name`]: build.name,
    [`job.${GITLAB}/timeout`]: goDuration(build.timeout),
    [`project.${GITLAB}/id`]: String(build.project_id),
  };
  for (const [key, value] of Object.entries(input.podAnnotations)) annotations[key] = input.expand(value);
  return { labels: { ...labels, ...input.ours.labels }, annotations: { ...annotations, ...input.ours.annotations } };
}

/** Whole seconds as Go's time.Duration prints them: `1h0m0s`, `10m0s`, `30s`. */
export function goDuration(seconds: number): string {
  return formatGoDuration(Math.max(0, Math.floor(seconds)) * 1000);
}
