/**
 * GitLab's failure reasons (`Enums::Ci::CommitStatus.failure_reasons`, the keys of `Ci::Build.failure_reasons`,
 * in its order), which GitLab sends in every job payload's `features.failure_reasons` and stores from API v4's
 * final update (docs/protocol-v4.md §5). A runner sends only some of them: script_failure,
 * runner_system_failure, job_execution_timeout, runner_configuration_error and
 * runner_external_dependency_failure (GitLab 17.x), runner_interrupted (18.x), unknown_failure; the rest
 * are GitLab's own, listed as GitLab lists them. A reason outside the list is stored as `unknown_failure`.
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
  'forward_deployment_failure',
  'user_blocked',
  'project_deleted',
  'ci_quota_exceeded',
  'pipeline_loop_detected',
  'no_matching_runner',
  'trace_size_exceeded',
  'builds_disabled',
  'environment_creation_failure',
  'deployment_rejected',
  'failed_outdated_deployment_job',
  'job_execution_server_timeout',
  'stuck_pending_with_matching_runners',
  'stuck_pending_no_matching_runners',
  'no_updates_running',
  'no_updates_canceling',
  'server_timeout_running',
  'server_timeout_canceling',
  'runner_configuration_error',
  'runner_external_dependency_failure',
  'runner_interrupted',
  'protected_environment_failure',
  'insufficient_bridge_permissions',
  'downstream_bridge_project_not_found',
  'invalid_bridge_trigger',
  'upstream_bridge_project_not_found',
  'insufficient_upstream_permissions',
  'bridge_pipeline_is_child_pipeline',
  'downstream_pipeline_creation_failed',
  'secrets_provider_not_found',
  'reached_max_descendant_pipelines_depth',
  'ip_restriction_failure',
  'reached_max_pipeline_hierarchy_size',
  'reached_downstream_pipeline_trigger_rate_limit',
  'duo_workflow_not_allowed',
  'job_router_failure',
  'job_token_expired',
  'id_token_burned_project_path',
  'downstream_project_trigger_resolved_to_empty',
] as const;

const KNOWN: ReadonlySet<string> = new Set(FAILURE_REASONS);

/** `reason` when the server knows it; `unknown_failure` for anything else (absent included). */
export function acceptedFailureReason(reason: unknown): string {
  return typeof reason === 'string' && KNOWN.has(reason) ? reason : 'unknown_failure';
}
