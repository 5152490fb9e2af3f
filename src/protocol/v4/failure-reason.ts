/**
 * The `failure_reason` of a final `failed` update (docs/protocol-v4.md §8.6). The runner names why a
 * job failed with one of its own reasons; before sending, a reason the server did not list in the
 * job's `features.failure_reasons` is mapped to an older equivalent the server knows, else to
 * `unknown_failure`, as GitLab Runner does. Three reasons every server accepts need no listing.
 */

/** Why a job failed, as the runner knows it. */
export type FailureReason =
  | 'script_failure'
  | 'runner_system_failure'
  | 'job_execution_timeout'
  | 'unknown_failure'
  | 'image_pull_failure'
  | 'runner_configuration_error'
  | 'runner_external_dependency_failure'
  | 'runner_interrupted'
  /** A job the server canceled: GitLab Runner's internal reason, never accepted, so sent as `unknown_failure`. */
  | 'job_canceled';

const ALWAYS_ACCEPTED: ReadonlySet<string> = new Set(['script_failure', 'runner_system_failure', 'job_execution_timeout']);

/** Older equivalents of newer reasons, for servers that do not know them (GitLab Runner 16+'s mapping). */
const OLDER: Readonly<Partial<Record<FailureReason, FailureReason>>> = {
  image_pull_failure: 'runner_system_failure',
  runner_external_dependency_failure: 'runner_system_failure',
  runner_configuration_error: 'script_failure',
};

/**
 * The reason to send: `reason` when the server accepts it (listed, or always accepted), else its
 * older equivalent when accepted, else `unknown_failure`. No reason at all is `script_failure`.
 */
export function supportedFailureReason(reason: FailureReason | undefined, accepted: readonly string[] | undefined): string {
  if (reason === undefined) return 'script_failure';
  const known = (name: string): boolean => ALWAYS_ACCEPTED.has(name) || (accepted?.includes(name) ?? false);
  if (known(reason)) return reason;
  const older = OLDER[reason];
  if (older !== undefined && known(older)) return older;
  return 'unknown_failure';
}
