/**
 * Wire types of the runner API v4 (`/api/v4`), the shapes docs/protocol-v4.md describes endpoint by
 * endpoint. What the runner sends is typed exactly; what it receives is typed as `parseJobPayload`
 * returns it (payload.ts validates and maps it onto the job model). Nothing here does I/O.
 */

/** `info.features` (docs/protocol-v4.md §8.3): the whole map is always sent, each key true when this runner implements it. */
export interface FeaturesInfo {
  variables: boolean;
  image: boolean;
  services: boolean;
  artifacts: boolean;
  cache: boolean;
  shared: boolean;
  upload_multiple_artifacts: boolean;
  upload_raw_artifacts: boolean;
  session: boolean;
  terminal: boolean;
  refspecs: boolean;
  masking: boolean;
  proxy: boolean;
  raw_variables: boolean;
  artifacts_exclude: boolean;
  multi_build_steps: boolean;
  trace_reset: boolean;
  trace_checksum: boolean;
  trace_size: boolean;
  vault_secrets: boolean;
  cancelable: boolean;
  return_exit_code: boolean;
  service_variables: boolean;
  service_multiple_aliases: boolean;
  image_executor_opts: boolean;
  service_executor_opts: boolean;
  fallback_cache_keys: boolean;
  cancel_gracefully: boolean;
}

/** The `info` object of every runner call (§5.1). */
export interface VersionInfo {
  name: string;
  version: string;
  revision: string;
  platform: string;
  architecture: string;
  executor: string;
  shell: string;
  features: FeaturesInfo;
  config: { gpus: string };
}

/** V1 `POST /runners` body (legacy registration). */
export interface RegisterRunnerRequestV4 {
  token: string;
  description?: string;
  /** Comma-separated, as GitLab Runner sends it. */
  tag_list?: string;
  run_untagged: boolean;
  locked: boolean;
  access_level?: 'not_protected' | 'ref_protected';
  maximum_timeout?: number;
  paused: boolean;
  maintenance_note?: string;
  info: VersionInfo;
}

/** V1 `201` and V4 JSON body (≈16.0+). */
export interface RunnerCredentials {
  id: number;
  token: string;
  /** ISO 8601, or absent/null when the token does not expire. */
  token_expires_at?: string | null;
}

/** V5 `201` body. */
export interface ResetTokenResponse {
  token: string;
  token_expires_at?: string | null;
}

/** V6 `POST /jobs/request` body. */
export interface JobRequest {
  info: VersionInfo;
  token: string;
  system_id?: string;
  last_update?: string;
}

/** States the runner reports on V7. */
export type JobStateV4 = 'running' | 'success' | 'failed';

/** V7 `PUT /jobs/{id}` body (§7.1). */
export interface UpdateJobRequest {
  info: VersionInfo;
  token: string;
  state: JobStateV4;
  failure_reason?: string;
  /** Deprecated duplicate of `output.checksum`, still sent by every runner. */
  checksum?: string;
  output?: { checksum: string; bytesize: number };
  exit_code?: number;
}

/** What the server says about a job in `Job-Status` (V7, V8, and a 403's header). */
export type RemoteJobStatus = 'running' | 'canceling' | 'canceled' | 'failed' | 'success' | (string & {});
