/**
 * The runner side of `/ci/api/v1` (docs/protocol-v1.md §4): one method per endpoint, each returning the
 * HTTP status (or -1 for transport errors) with its classification from `retryable.ts`, plus what the
 * endpoint answers. Methods never throw for server or network failures; they reject only when the
 * caller's signal aborts. Retrying is the caller's decision (trace sender, poll loop, uploader), made
 * from `outcome` with the one helper in `retry.ts`.
 */
import { apiBaseUrl } from '../protocol/base-url.js';
import { formatContentRange, parseServerRange } from '../protocol/content-range.js';
import { parseUpdateInterval } from '../protocol/v4/trace-codecs.js';
import type { RegisterRunnerResponse, RunnerBuildState, RunnerInfo } from '../protocol/types.js';
import type { ApiVersion, JobRef, JobUpdate, JobUpdateResult, PatchTraceResult, RunnerApi } from './api.js';
import { type ApiContext, type ApiResult, apiResult, decodeJson } from './api-call.js';
import { type ArtifactDownloadOptions, type ArtifactUpload, downloadArtifactArchive, uploadArtifactArchive } from './artifact-transfer.js';
import { decodeBuildResponse, type RequestBuildResult } from './build-response.js';
import { runnerInfo, USER_AGENT } from './info.js';
import { TRANSPORT_ERROR, type Endpoint } from './retryable.js';
import type { TlsMaterial } from './tls.js';
import { sendTracePart } from './trace-part.js';
import { drain, header, send, Transport, type HttpResponse, type TransportOptions } from './transport.js';

// Callers import the result types along with the client.
export type { ApiResult, PatchTraceResult, RequestBuildResult };

export interface RunnerApiClientOptions extends TransportOptions {
  /** The coordinator URL as configured (`url` in config.toml); `/ci/api/v1/` is appended per §2.1. */
  url: string;
  /** Executor name reported in `info` (absent while registering). */
  executor?: string;
  /** Deadline for response headers of ordinary calls. Default 60 s. */
  requestTimeoutMs?: number;
  /** Deadline for E4's response headers; must exceed the server's long-poll time. Default 120 s. */
  pollTimeoutMs?: number;
}

export class RunnerApiClient implements RunnerApi {
  readonly api: ApiVersion = 'v1';
  readonly baseUrl: URL;
  readonly info: RunnerInfo;
  /** The TLS material the client connects with; git and the job's CI_SERVER_TLS_CA_FILE use it too. */
  readonly tls: TlsMaterial;
  /** What the endpoint modules (artifact transfers) send through. */
  private readonly context: ApiContext;
  private readonly pollTimeoutMs: number;

  constructor(options: RunnerApiClientOptions) {
    this.baseUrl = apiBaseUrl(options.url);
    this.info = runnerInfo(options.executor);
    this.tls = options.tls ?? {};
    this.context = {
      transport: new Transport({ ...options, userAgent: USER_AGENT }),
      baseUrl: this.baseUrl,
      tls: this.tls,
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
    };
    this.pollTimeoutMs = options.pollTimeoutMs ?? 120_000;
  }

  /** E1: registers a runner with a registration token. */
  async registerRunner(
    params: { token: string; description?: string; tagList?: string[]; runUntagged: boolean; locked?: boolean },
    signal?: AbortSignal,
  ): Promise<ApiResult & { runner?: RegisterRunnerResponse }> {
    const body = {
      info: runnerInfo(),
      token: params.token,
      ...(params.description ? { description: params.description } : {}),
      ...(params.tagList && params.tagList.length > 0 ? { tag_list: params.tagList.join(',') } : {}),
      run_untagged: params.runUntagged,
      ...(params.locked !== undefined ? { locked: params.locked } : {}),
    };
    const response = await this.json('POST', 'runners/register.json', body, signal);
    const result = this.result('registerRunner', response);
    if (result.outcome !== 'ok') {
      await drain(response);
      return result;
    }
    const decoded = await decodeJson(response);
    const runner = decoded as Partial<RegisterRunnerResponse> | undefined;
    if (typeof runner?.token !== 'string' || runner.token === '') {
      return { status: TRANSPORT_ERROR, outcome: 'retry', error: new Error('registration answer has no runner token') };
    }
    return { ...result, runner: { id: typeof runner.id === 'number' ? runner.id : 0, token: runner.token } };
  }

  /** E2: deletes a runner. Only 200 is success (§4.2). */
  async deleteRunner(token: string, signal?: AbortSignal): Promise<ApiResult> {
    const response = await this.json('DELETE', 'runners/delete', { token }, signal);
    await drain(response);
    return this.result('deleteRunner', response);
  }

  /** E3: `PUT /builds/-1`; 404 means the token is valid, 403 that the runner is gone (§4.3). */
  async verifyRunner(token: string, signal?: AbortSignal): Promise<ApiResult & { alive: boolean | undefined }> {
    const response = await this.json('PUT', 'builds/-1', { token }, signal);
    await drain(response);
    const result = this.result('verifyRunner', response);
    const alive = result.status === 404 ? true : result.outcome === 'final' ? false : undefined;
    return { ...result, alive };
  }

  /** E4: asks for a build. `lastUpdate` is the last `X-GitLab-Last-Update` seen for this runner. */
  async requestBuild(token: string, lastUpdate: string | undefined, signal?: AbortSignal): Promise<RequestBuildResult> {
    const body = { info: this.info, token, ...(lastUpdate ? { last_update: lastUpdate } : {}) };
    const response = await this.json('POST', 'builds/register.json', body, signal, this.pollTimeoutMs);
    return decodeBuildResponse(response, this.result('requestBuild', response));
  }

  /** E5: reports a state and/or the complete trace (which replaces the server's copy). */
  async updateBuild(
    id: number,
    token: string,
    update: { state?: RunnerBuildState; trace?: string },
    signal?: AbortSignal,
  ): Promise<ApiResult> {
    const body = { info: this.info, token, ...update };
    const response = await this.json('PUT', `builds/${id}.json`, body, signal);
    await drain(response);
    return this.result('updateBuild', response);
  }

  /**
   * E5 with the complete trace streamed into the body's `trace` string, so a large trace is never
   * held in memory as one string. `trace` yields the text in order; it is consumed once per call.
   */
  async updateBuildWithTrace(
    id: number,
    token: string,
    state: RunnerBuildState,
    trace: AsyncIterable<string>,
    signal?: AbortSignal,
  ): Promise<ApiResult> {
    const envelope = JSON.stringify({ info: this.info, token, state, trace: '' });
    const head = envelope.slice(0, -2); // up to and including the opening quote of `trace`
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.from(head);
      // JSON.stringify escapes a lone surrogate as \uXXXX, so a pair split between pieces still
      // decodes to the same character.
      for await (const piece of trace) yield Buffer.from(JSON.stringify(piece).slice(1, -1));
      yield Buffer.from('"}');
    }
    const response = await send(this.context.transport, {
      method: 'PUT',
      url: new URL(`builds/${id}.json`, this.baseUrl),
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': USER_AGENT },
      body: body(),
      signal,
      headersTimeoutMs: this.context.requestTimeoutMs,
    });
    await drain(response);
    return this.result('updateBuild', response);
  }

  /** E5 as the job model's update: `running` or the final state, with the runner token (v1 has no checksum). */
  updateJob(job: JobRef, update: JobUpdate, signal?: AbortSignal): Promise<JobUpdateResult> {
    return this.updateBuild(job.id, job.runnerToken, { state: update.state }, signal);
  }

  /** E5 with the whole trace, as the job model's update. */
  updateJobWithTrace(job: JobRef, state: 'running' | 'success' | 'failed', trace: AsyncIterable<string>, signal?: AbortSignal): Promise<JobUpdateResult> {
    return this.updateBuildWithTrace(job.id, job.runnerToken, state, trace, signal);
  }

  /** E6: appends `bytes` at offset `start` of the server's trace. */
  async patchTrace(
    id: number,
    buildToken: string,
    start: number,
    bytes: Uint8Array,
    signal?: AbortSignal,
  ): Promise<PatchTraceResult> {
    const headers = { 'content-range': formatContentRange(start, start + bytes.byteLength), 'build-token': buildToken };
    const response = await sendTracePart(this.context, new URL(`builds/${id}/trace.txt`, this.baseUrl), headers, bytes, signal);
    const serverLength = parseServerRange(response.headers.range);
    const buildStatus = header(response.headers, 'build-status');
    // §4.6: `canceled` or `failed` stop the job; v1 has no stop-at-once, so after_script still runs.
    const cancel = buildStatus === 'canceled' || buildStatus === 'failed' ? ('graceful' as const) : undefined;
    // Not in v1 (GitLab 8.x–9.x never sent it): the reference server paces v1 runners with it too.
    const updateIntervalMs = parseUpdateInterval(header(response.headers, 'x-gitlab-trace-update-interval'));
    return {
      ...this.result('patchTrace', response),
      ...(serverLength !== undefined ? { serverLength } : {}),
      ...(buildStatus !== undefined ? { buildStatus } : {}),
      ...(cancel ? { cancel } : {}),
      ...(updateIntervalMs !== undefined ? { updateIntervalMs } : {}),
    };
  }

  /** E7: uploads an archive from disk as a streamed multipart body (field `file`). */
  uploadArtifacts(id: number, buildToken: string, file: ArtifactUpload, signal?: AbortSignal): Promise<ApiResult & { body?: unknown }> {
    const url = new URL(`builds/${id}/artifacts`, this.baseUrl);
    if (file.expireIn) url.searchParams.set('expire_in', file.expireIn);
    return uploadArtifactArchive(this.context, { url, headers: { 'build-token': buildToken }, endpoint: 'uploadArtifacts' }, file, signal);
  }

  /**
   * E8: downloads a build's artifacts to `destination` (streamed; the file is written only on 200).
   * With `maxBytes`, a body that grows past it is cut off at once and reported as a retryable
   * failure, so a broken or hostile server cannot fill the disk. With `onChunk`, every chunk is
   * handed to it, in order, before it is written; the download waits for a returned promise
   * (backpressure), and a throw or rejection stops the download and is reported as a retryable
   * failure whose `error` is what was thrown (the caller knows best whether to retry).
   */
  downloadArtifacts(
    id: number,
    buildToken: string,
    destination: string,
    signal?: AbortSignal,
    options: ArtifactDownloadOptions = {},
  ): Promise<ApiResult & { size?: number }> {
    const route = { url: new URL(`builds/${id}/artifacts`, this.baseUrl), headers: { 'build-token': buildToken }, endpoint: 'downloadArtifacts' as const };
    return downloadArtifactArchive(this.context, route, destination, signal, options);
  }

  /** Closes the connection pools. */
  async close(): Promise<void> {
    await this.context.transport.close();
  }

  private json(method: 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, signal?: AbortSignal, timeoutMs?: number): Promise<HttpResponse> {
    return send(this.context.transport, {
      method,
      url: new URL(path, this.baseUrl),
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': USER_AGENT },
      body: JSON.stringify(body),
      signal,
      headersTimeoutMs: timeoutMs ?? this.context.requestTimeoutMs,
    });
  }

  private result(endpoint: Endpoint, response: HttpResponse): ApiResult {
    return apiResult(this.context, endpoint, response);
  }
}
