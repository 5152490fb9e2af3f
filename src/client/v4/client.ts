/**
 * The runner side of `/api/v4` (docs/protocol-v4.md): the same contract as the v1 client
 * (`RunnerApi`: one method per purpose, status -1 for transport errors, a classification from the
 * one table in retryable.ts, no throws but the caller's abort), over v4's paths, tokens and headers.
 * Jobs are mapped onto the one job model on arrival (protocol/v4/payload.ts); answers to job calls
 * are read into the same fields as v1's (`cancel` from `Job-Status`, `updateIntervalMs` from
 * `X-GitLab-Trace-Update-Interval`).
 */
import { arch, platform } from 'node:process';
import { parseServerRange } from '../../protocol/content-range.js';
import type { RunnerInfo } from '../../protocol/types.js';
import { apiV4BaseUrl } from '../../protocol/v4/base-url.js';
import { runnerFeatures } from '../../protocol/v4/features.js';
import { parseJobPayload } from '../../protocol/v4/payload.js';
import { cancelRequest, formatInclusiveRange, parseUpdateInterval } from '../../protocol/v4/trace-codecs.js';
import type { UpdateJobRequest, VersionInfo } from '../../protocol/v4/types.js';
import { RUNNER_NAME, VERSION } from '../../util/version.js';
import type { ApiVersion, JobAnswer, JobRef, JobUpdate, JobUpdateResult, PatchTraceResult, RunnerApi } from '../api.js';
import { type ApiContext, type ApiResult, apiResult } from '../api-call.js';
import { type ArtifactDownloadOptions, type ArtifactUpload, downloadArtifactArchive, uploadArtifactArchive } from '../artifact-transfer.js';
import { decodeBuildResponse, type RequestBuildResult } from '../build-response.js';
import { runnerInfo, USER_AGENT } from '../info.js';
import { TRANSPORT_ERROR } from '../retryable.js';
import type { TlsMaterial } from '../tls.js';
import { sendTracePart } from '../trace-part.js';
import { drain, header, Transport, type HttpResponse, type TransportOptions } from '../transport.js';
import {
  deleteManagerV4,
  deleteRunnerV4,
  postJson,
  registerRunnerV4,
  resetTokenV4,
  resetTokenWithPatV4,
  verifyRunnerV4,
  type RegisterParams,
  type RunnerToken,
  type VerifyResult,
} from './runners.js';

export type { RegisterParams, RunnerToken, VerifyResult };

export interface RunnerApiV4ClientOptions extends TransportOptions {
  /** The coordinator URL as configured; `/api/v4/` is appended (a trailing `/ci` is dropped). */
  url: string;
  /** Executor name reported in `info` (absent while registering). */
  executor?: string;
  /** Shell reported in `info`. Default `bash`. */
  shell?: string;
  /** This host's id (`s_…`, config/system-id.ts), sent on verify and job requests. */
  systemId?: string;
  /** The runner's labels (GitLab Runner's `labels`), sent in `info` when there are any. */
  labels?: Readonly<Record<string, string>>;
  /** `[runners.docker] gpus`, sent as `info.config.gpus`. */
  gpus?: string;
  /** Deadline for response headers of ordinary calls. Default 60 s. */
  requestTimeoutMs?: number;
  /** Deadline for V6's response headers; must exceed a long poll (Workhorse holds ~50 s). Default 120 s. */
  pollTimeoutMs?: number;
}

export class RunnerApiV4Client implements RunnerApi {
  readonly api: ApiVersion = 'v4';
  readonly baseUrl: URL;
  readonly tls: TlsMaterial;
  readonly info: RunnerInfo;
  /** The `info` object of every v4 call. */
  readonly versionInfo: VersionInfo;
  readonly systemId: string | undefined;
  private readonly context: ApiContext;
  private readonly pollTimeoutMs: number;

  constructor(options: RunnerApiV4ClientOptions) {
    this.baseUrl = apiV4BaseUrl(options.url);
    this.tls = options.tls ?? {};
    this.info = runnerInfo(options.executor);
    this.versionInfo = versionInfo(options.executor ?? '', options.shell ?? 'bash', { ...(options.labels ? { labels: options.labels } : {}), ...(options.gpus ? { gpus: options.gpus } : {}) });
    this.systemId = options.systemId;
    this.context = {
      transport: new Transport({ ...options, userAgent: USER_AGENT }),
      baseUrl: this.baseUrl,
      tls: this.tls,
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
    };
    this.pollTimeoutMs = options.pollTimeoutMs ?? 120_000;
  }

  /** V1: registers a runner with a registration token (legacy flow; 410 when the server disabled it). */
  registerRunner(params: RegisterParams, signal?: AbortSignal): Promise<ApiResult & { runner?: RunnerToken }> {
    return registerRunnerV4(this.context, params, versionInfo('', 'bash'), signal);
  }

  /** V4 with this host's system id and `info`: alive (200), removed (403), or no answer. */
  verifyRunner(token: string, signal?: AbortSignal): Promise<VerifyResult> {
    return verifyRunnerV4(this.context, token, { ...(this.systemId ? { systemId: this.systemId } : {}), info: this.versionInfo }, signal);
  }

  /** V2: deletes the runner. Only 204 is success. */
  deleteRunner(token: string, signal?: AbortSignal): Promise<ApiResult> {
    return deleteRunnerV4(this.context, token, signal);
  }

  /** V3: deletes this host's manager of the runner (`glrt-` runners: the runner stays on the server). */
  deleteManager(token: string, systemId: string, signal?: AbortSignal): Promise<ApiResult> {
    return deleteManagerV4(this.context, token, systemId, signal);
  }

  /** V5: a new runner token; the old one stops working at once. */
  resetToken(token: string, signal?: AbortSignal): Promise<ApiResult & { token?: string; tokenExpiresAt?: string }> {
    return resetTokenV4(this.context, token, signal);
  }

  /** V5 by runner id with a personal access token instead of the runner's token (`reset-token --pat`). */
  resetTokenWithPat(runnerId: number, pat: string, signal?: AbortSignal): Promise<ApiResult & { token?: string; tokenExpiresAt?: string }> {
    return resetTokenWithPatV4(this.context, runnerId, pat, signal);
  }

  /** V6: asks for a job; a 201's body is mapped onto the job model. */
  async requestBuild(token: string, lastUpdate: string | undefined, signal?: AbortSignal): Promise<RequestBuildResult> {
    const body = { info: this.versionInfo, token, ...(this.systemId ? { system_id: this.systemId } : {}), ...(lastUpdate ? { last_update: lastUpdate } : {}) };
    const response = await postJson(this.context, 'POST', 'jobs/request', body, signal, this.pollTimeoutMs);
    return decodeBuildResponse(response, apiResult(this.context, 'requestJobV4', response), parseJobPayload, { keepBody: true });
  }

  /** V7: the job's state with the job token; the trace only as its checksum and size. */
  async updateJob(job: JobRef, update: JobUpdate, signal?: AbortSignal): Promise<JobUpdateResult> {
    const body: UpdateJobRequest = {
      info: this.versionInfo,
      token: job.token,
      state: update.state,
      ...(update.state === 'failed' && update.failureReason ? { failure_reason: update.failureReason } : {}),
      ...(update.output ? { checksum: update.output.checksum, output: update.output } : {}),
      ...(update.state === 'failed' && update.exitCode ? { exit_code: update.exitCode } : {}),
    };
    const response = await postJson(this.context, 'PUT', `jobs/${job.id}`, body, signal);
    await drain(response);
    return { ...apiResult(this.context, 'updateJobV4', response), ...jobAnswer(response) };
  }

  /** v4 has no update carrying the whole trace: refused without a request. */
  updateJobWithTrace(): Promise<JobUpdateResult> {
    return Promise.resolve({ status: TRANSPORT_ERROR, outcome: 'final', error: new Error('the v4 API has no update carrying the whole trace') });
  }

  /** V8: appends `bytes` (never empty) at `start`, with the inclusive `Content-Range` and `JOB-TOKEN`. */
  async patchTrace(id: number, jobToken: string, start: number, bytes: Uint8Array, signal?: AbortSignal): Promise<PatchTraceResult> {
    const headers = { 'content-range': formatInclusiveRange(start, start + bytes.byteLength), 'job-token': jobToken };
    const response = await sendTracePart(this.context, new URL(`jobs/${id}/trace`, this.baseUrl), headers, bytes, signal);
    const serverLength = parseServerRange(response.headers.range);
    return { ...apiResult(this.context, 'patchTraceV4', response), ...(serverLength !== undefined ? { serverLength } : {}), ...jobAnswer(response) };
  }

  /** V10: uploads one artifacts entry, its type, format and expiry as query parameters. */
  uploadArtifacts(id: number, jobToken: string, file: ArtifactUpload, signal?: AbortSignal): Promise<ApiResult & { body?: unknown }> {
    const url = new URL(`jobs/${id}/artifacts`, this.baseUrl);
    if (file.artifactFormat) url.searchParams.set('artifact_format', file.artifactFormat);
    if (file.artifactType) url.searchParams.set('artifact_type', file.artifactType);
    if (file.expireIn) url.searchParams.set('expire_in', file.expireIn);
    return uploadArtifactArchive(this.context, { url, headers: { 'job-token': jobToken }, endpoint: 'uploadArtifacts' }, file, signal);
  }

  /** V11: downloads a dependency's artifacts with that dependency's token (a redirect is followed once). */
  downloadArtifacts(id: number, token: string, destination: string, signal?: AbortSignal, options: ArtifactDownloadOptions = {}): Promise<ApiResult & { size?: number }> {
    const url = new URL(`jobs/${id}/artifacts`, this.baseUrl);
    url.searchParams.set('direct_download', 'true');
    return downloadArtifactArchive(this.context, { url, headers: { 'job-token': token }, endpoint: 'downloadArtifacts' }, destination, signal, options);
  }

  async close(): Promise<void> {
    await this.context.transport.close();
  }
}

/** What a V7/V8 answer asks of the job: `Job-Status` and `X-GitLab-Trace-Update-Interval`. */
function jobAnswer(response: HttpResponse): JobAnswer {
  const cancel = cancelRequest(header(response.headers, 'job-status'));
  const updateIntervalMs = parseUpdateInterval(header(response.headers, 'x-gitlab-trace-update-interval'));
  return { ...(cancel ? { cancel } : {}), ...(updateIntervalMs !== undefined ? { updateIntervalMs } : {}) };
}

/**
 * The v4 `info` object: who we are and exactly what we implement (§5.1, §10); the runner's labels
 * (omitted when none, as GitLab Runner omits them) and its docker `gpus`.
 */
export function versionInfo(executor: string, shell: string, extra: { labels?: Readonly<Record<string, string>>; gpus?: string } = {}): VersionInfo {
  const labels = extra.labels && Object.keys(extra.labels).length > 0 ? { labels: { ...extra.labels } } : {};
  return {
    name: RUNNER_NAME,
    version: VERSION,
    revision: '',
    platform,
    architecture: arch,
    executor,
    shell: executor === '' ? '' : shell,
    features: runnerFeatures(executor),
    config: { gpus: extra.gpus ?? '' },
    ...labels,
  };
}
