/**
 * A job's failure reason as a bounded metric label. The reason text names commands, exit codes and
 * paths; a label holding it would grow a new time series per job. The classes follow GitLab's
 * `failure_reason` names where one fits.
 */
const CLASSES: ReadonlyArray<[RegExp, string]> = [
  [/^exit status |^killed by /, 'script_failure'],
  [/^execution took longer than /, 'job_execution_timeout'],
  [/^canceled$/, 'canceled'],
  [/shutting down|forced shutdown|runner was stopped/, 'runner_shutdown'],
  [/^getting sources failed/, 'get_sources_failure'],
  [/^downloading artifacts failed/, 'artifacts_download_failure'],
  [/^uploading artifacts failed/, 'artifacts_upload_failure'],
  [/^runner error: |could not start the job/, 'runner_system_failure'],
];

/** `none` for a success; `unknown_failure` for a reason no class covers. */
export function failureReasonClass(state: 'success' | 'failed', reason: string | undefined): string {
  if (state === 'success') return 'none';
  for (const [pattern, name] of CLASSES) if (reason !== undefined && pattern.test(reason)) return name;
  return 'unknown_failure';
}
