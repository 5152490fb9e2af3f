/**
 * The runner API as the agent uses it, whichever version the coordinator speaks: `RunnerApiClient`
 * (`/ci/api/v1`), `RunnerApiV4Client` (`/api/v4`) and `DetectingRunnerApi` (either, found by asking
 * the server) all implement it. Jobs arrive as the one job model (`BuildPayload`); the job-scoped
 * calls take the same arguments on both APIs, and their answers are read into the same fields
 * (`cancel`, `updateIntervalMs`) so the trace sender and the final update each keep one code path,
 * branching on `api` only where the protocols differ in kind (v1's whole-trace PUT, v4's checksum).
 */
import type { ApiResult } from './api-call.js';
import type { ArtifactDownloadOptions, ArtifactUpload } from './artifact-transfer.js';
import type { RequestBuildResult } from './build-response.js';
import type { TlsMaterial } from './tls.js';

export type ApiVersion = 'v1' | 'v4';

/** A job as its updates address it. */
export interface JobRef {
  id: number;
  /** The job token (v1: the build token). */
  token: string;
  /** The runner's token: v1 authenticates state updates with it; v4 with the job token. */
  runnerToken: string;
}

/** A job state update: a keep-alive (`running`) or the final state. */
export interface JobUpdate {
  state: 'running' | 'success' | 'failed';
  /** v4: the trace sent so far, as its CRC-32 (`crc32:…`) and length. v1 has no such field. */
  output?: { checksum: string; bytesize: number };
  /** v4: why a `failed` job failed, one of the reasons the server accepts (v4/failure-reason.ts). */
  failureReason?: string;
  /** v4: the script's exit code of a `failed` job (left out when 0 or unknown). */
  exitCode?: number;
}

/** What the server asks of a running job in an answer: stop the script gracefully, or at once. */
export type CancelRequest = 'graceful' | 'now';

/** An answer to a job update or trace part, read the same way on both APIs. */
export interface JobAnswer {
  /** The server canceled the job (v1 `Build-Status`, v4 `Job-Status`). */
  cancel?: CancelRequest;
  /** The server's pacing (v4 `X-GitLab-Trace-Update-Interval`): the trace interval, or the wait before repeating a 202. */
  updateIntervalMs?: number;
}

export type JobUpdateResult = ApiResult & JobAnswer;

export interface PatchTraceResult extends ApiResult, JobAnswer {
  /** The server's stored length from `Range: 0-<n>` (202 and 416). */
  serverLength?: number;
  /** v1's `Build-Status` header as sent. */
  buildStatus?: string;
}

export interface RunnerApi {
  /** The API calls go to. A detecting client knows it after its first call. */
  readonly api: ApiVersion;
  /** The TLS material the client connects with; git and the job's CI_SERVER_TLS_CA_FILE use it too. */
  readonly tls: TlsMaterial;
  /** This host's system id, sent over v4 (none over v1); the job log's header names it, as GitLab Runner's does. */
  readonly systemId?: string | undefined;
  /** Asks for a job. `lastUpdate` is the last `X-GitLab-Last-Update` seen for this runner. */
  requestBuild(token: string, lastUpdate: string | undefined, signal?: AbortSignal): Promise<RequestBuildResult>;
  /** Whether the runner token is known: true (alive), false (removed), undefined (no answer). */
  verifyRunner(token: string, signal?: AbortSignal): Promise<ApiResult & { alive: boolean | undefined }>;
  /** A job state update without trace (v1 PUT /builds/:id; v4 PUT /jobs/:id with the checksum). */
  updateJob(job: JobRef, update: JobUpdate, signal?: AbortSignal): Promise<JobUpdateResult>;
  /**
   * v1 only: a state update carrying the whole trace, which replaces the server's copy. Over v4 it
   * answers status -1 `final` without a request: v4 has no such update.
   */
  updateJobWithTrace(job: JobRef, state: 'running' | 'success' | 'failed', trace: AsyncIterable<string>, signal?: AbortSignal): Promise<JobUpdateResult>;
  /** Appends `bytes` at offset `start` of the server's trace; never called with no bytes over v4. */
  patchTrace(id: number, jobToken: string, start: number, bytes: Uint8Array, signal?: AbortSignal): Promise<PatchTraceResult>;
  /** Uploads an archive (v4: with its `artifact_type` and `artifact_format`). */
  uploadArtifacts(id: number, jobToken: string, file: ArtifactUpload, signal?: AbortSignal): Promise<ApiResult & { body?: unknown }>;
  /** Downloads a job's artifacts to `destination` with that dependency's token (streamed; written only on 200). */
  downloadArtifacts(id: number, token: string, destination: string, signal?: AbortSignal, options?: ArtifactDownloadOptions): Promise<ApiResult & { size?: number }>;
  close(): Promise<void>;
}
