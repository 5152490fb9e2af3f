/**
 * Labels on every container and network the docker executor creates: which runner (a hash of its
 * token, never the token), which job and slot. A restarted daemon finds what its predecessor left by them.
 */
import { createHash } from 'node:crypto';
import { expandString } from '../../util/expand.js';

export const LABEL_PREFIX = 'com.ci-runner';

/** Identifies a runner entry without revealing its token. */
export function runnerLabel(runnerToken: string): string {
  return createHash('sha256').update(runnerToken).digest('hex').slice(0, 16);
}

/** `--label` arguments for one job's containers and network. */
export function jobLabelArgs(runnerToken: string, jobId: number, slot: number): string[] {
  return [
    '--label', `${LABEL_PREFIX}.managed=true`,
    '--label', `${LABEL_PREFIX}.runner=${runnerLabel(runnerToken)}`,
    '--label', `${LABEL_PREFIX}.job=${jobId}`,
    '--label', `${LABEL_PREFIX}.slot=${slot}`,
  ];
}

/** The `--filter` value selecting everything of one runner entry. */
export function runnerFilter(runnerToken: string): string {
  return `label=${LABEL_PREFIX}.runner=${runnerLabel(runnerToken)}`;
}

/**
 * `[runners.docker] container_labels` as `--label` arguments, each value with the job's variables
 * expanded (GitLab Runner's); a service also gets each under GitLab Runner's own prefix, as there.
 */
export function containerLabelArgs(labels: Readonly<Record<string, string>>, variables: ReadonlyArray<{ key: string; value: string }>, service: boolean): string[] {
  const lookup = (key: string): string => variables.findLast((v) => v.key === key)?.value ?? '';
  return Object.entries(labels).flatMap(([name, value]) => {
    const expanded = expandString(value, lookup);
    return [`--label=${name}=${expanded}`, ...(service ? [`--label=com.gitlab.gitlab-runner.${name}=${expanded}`] : [])];
  });
}
