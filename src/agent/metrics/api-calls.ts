/**
 * The `endpoint` and `method` labels of `gitlab_runner_api_request_*` for each runner API call:
 * GitLab Runner's names for the four calls it counts (network/api_requests_collector.go), and names
 * of the same form for the calls it leaves out. v1's calls use the same names as their v4 twins.
 */
const CALLS: Readonly<Record<string, { endpoint: string; method: string }>> = {
  requestBuild: { endpoint: 'request_job', method: 'post' },
  updateJob: { endpoint: 'update_job', method: 'put' },
  updateJobWithTrace: { endpoint: 'update_job', method: 'put' },
  patchTrace: { endpoint: 'patch_trace', method: 'patch' },
  resetToken: { endpoint: 'reset_token', method: 'post' },
  uploadArtifacts: { endpoint: 'upload_artifacts', method: 'post' },
  downloadArtifacts: { endpoint: 'download_artifacts', method: 'get' },
  verifyRunner: { endpoint: 'verify_runner', method: 'post' },
  registerRunner: { endpoint: 'register_runner', method: 'post' },
  deleteRunner: { endpoint: 'unregister_runner', method: 'delete' },
  deleteManager: { endpoint: 'unregister_runner_manager', method: 'delete' },
};

/** The labels of a client method (an unknown one keeps its name, in lower case). */
export function apiCall(call: string): { endpoint: string; method: string } {
  return CALLS[call] ?? { endpoint: call.toLowerCase(), method: 'unknown' };
}

/** GitLab Runner's `status_class`: `2xx` … `5xx`, else `unknown`. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'unknown';
}
