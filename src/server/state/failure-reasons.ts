/**
 * GitLab's failure reasons that a runner may report in API v4's final update (docs/protocol-v4.md §5),
 * sent to it in the payload's `features.failure_reasons`. A reason outside the list is stored as
 * `unknown_failure`, as GitLab does.
 */
export const FAILURE_REASONS = [
  'unknown_failure',
  'script_failure',
  'api_failure',
  'stuck_or_timeout_failure',
  'runner_system_failure',
  'missing_dependency_failure',
  'runner_unsupported',
  'stale_schedule',
  'job_execution_timeout',
  'archived_failure',
  'unmet_prerequisites',
  'scheduler_failure',
  'data_integrity_failure',
  'trace_size_exceeded',
  'runner_configuration_error',
  'runner_external_dependency_failure',
] as const;

const KNOWN: ReadonlySet<string> = new Set(FAILURE_REASONS);

/** `reason` when the server knows it; `unknown_failure` for anything else (absent included). */
export function acceptedFailureReason(reason: unknown): string {
  return typeof reason === 'string' && KNOWN.has(reason) ? reason : 'unknown_failure';
}
