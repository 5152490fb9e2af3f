/**
 * The runner side of `/ci/api/v1` (PROTOCOL.md §4): one method per endpoint, each returning the
 * HTTP status (or -1 for transport errors) with its classification from `outcome.ts`, plus what the
 * endpoint answers. Methods never throw for server or network failures; they reject only when the
 * caller's signal aborts. Retrying is the caller's decision (trace sender, poll loop, uploader), made
 * from `outcome`.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { apiBaseUrl } from '../protocol/base-url.js';
import { parseBuildPayload } from '../protocol/build-payload.js';
import { formatContentRange, parseServerRange } from '../protocol/content-range.js';
import type {
  BuildPayload,
  RegisterRunnerResponse,
  RunnerBuildState,
  RunnerInfo,
} from '../protocol/types.js';
import { drain, header, readText, send, Transport, type HttpResponse, type TransportOptions } from './http.js';
import { runnerInfo, USER_AGENT } from './info.js';
import { multipartFileBody } from './multipart.js';
import type { TlsMaterial } from './tls.js';
import { explainTransportError } from './tls-hints.js';
import { classify, TRANSPORT_ERROR, type Endpoint, type Outcome } from './outcome.js';

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

export interface ApiResult {
  status: number;
  outcome: Outcome;
  /** The transport error behind status -1. */
  error?: Error;
}

export type RequestBuildResult =
  | (ApiResult & { kind: 'build'; build: BuildPayload })
  /** 201 whose body is not a valid build: report it failed when id and token are known (§12 item 22). */
  | (ApiResult & { kind: 'invalid-build'; message: string; id?: number; token?: string })
  | (ApiResult & { kind: 'none'; lastUpdate?: string })
  | (ApiResult & { kind: 'forbidden' })
  | (ApiResult & { kind: 'error' });

export interface PatchTraceResult extends ApiResult {
  /** The server's stored length from `Range: 0-<n>` (202 and 416). */
  serverLength?: number;
  /** `Build-Status` header (202): `canceled` or `failed` mean the job must stop (§4.6). */
  buildStatus?: string;
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;

export class RunnerApiClient {
  readonly baseUrl: URL;
  readonly info: RunnerInfo;
  /** The TLS material the client connects with; git and the job's CI_SERVER_TLS_CA_FILE use it too. */
  readonly tls: TlsMaterial;
  private readonly transport: Transport;
  private readonly requestTimeoutMs: number;
  private readonly pollTimeoutMs: number;

  constructor(options: RunnerApiClientOptions) {
    this.baseUrl = apiBaseUrl(options.url);
    this.info = runnerInfo(options.executor);
    this.tls = options.tls ?? {};
    this.transport = new Transport({ ...options, userAgent: USER_AGENT });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
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
    const decoded = await this.decodeJson(response);
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
    const result = this.result('requestBuild', response);
    if (response.status !== 201) {
      await drain(response);
      const nextUpdate = header(response.headers, 'x-gitlab-last-update');
      if (result.outcome === 'ok') return { ...result, kind: 'none', ...(nextUpdate ? { lastUpdate: nextUpdate } : {}) };
      if (result.outcome === 'final') return { ...result, kind: 'forbidden' };
      return { ...result, kind: 'error' };
    }
    const type = header(response.headers, 'content-type') ?? '';
    const text = await this.readText(response);
    if (text === undefined) return { status: TRANSPORT_ERROR, outcome: 'retry', kind: 'error', error: new Error('build body was cut off') };
    let decoded: unknown;
    try {
      decoded = JSON.parse(text);
    } catch {
      return { ...result, kind: 'invalid-build', message: 'the server assigned a build but its body is not JSON' };
    }
    const parsed = parseBuildPayload(decoded);
    if (!JSON_TYPE.test(type)) {
      const id = parsed.ok ? parsed.build.id : parsed.id;
      const buildToken = parsed.ok ? parsed.build.token : parsed.token;
      return {
        ...result,
        kind: 'invalid-build',
        message: `the server assigned a build with Content-Type ${JSON.stringify(type)} instead of application/json`,
        ...(id !== undefined ? { id } : {}),
        ...(buildToken !== undefined ? { token: buildToken } : {}),
      };
    }
    if (!parsed.ok) {
      return { ...result, kind: 'invalid-build', message: `invalid build payload: ${parsed.message}`, ...(parsed.id !== undefined ? { id: parsed.id } : {}), ...(parsed.token !== undefined ? { token: parsed.token } : {}) };
    }
    return { ...result, kind: 'build', build: parsed.build };
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
    const response = await send(this.transport, {
      method: 'PUT',
      url: new URL(`builds/${id}.json`, this.baseUrl),
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': USER_AGENT },
      body: body(),
      signal,
      headersTimeoutMs: this.requestTimeoutMs,
    });
    await drain(response);
    return this.result('updateBuild', response);
  }

  /** E6: appends `bytes` at offset `start` of the server's trace. */
  async patchTrace(
    id: number,
    buildToken: string,
    start: number,
    bytes: Uint8Array,
    signal?: AbortSignal,
  ): Promise<PatchTraceResult> {
    const response = await send(this.transport, {
      method: 'PATCH',
      url: new URL(`builds/${id}/trace.txt`, this.baseUrl),
      headers: {
        'content-type': 'text/plain',
        'content-range': formatContentRange(start, start + bytes.byteLength),
        'build-token': buildToken,
        'user-agent': USER_AGENT,
      },
      body: bytes,
      signal,
      headersTimeoutMs: this.requestTimeoutMs,
    });
    await drain(response);
    const serverLength = parseServerRange(response.headers.range);
    const buildStatus = header(response.headers, 'build-status');
    return {
      ...this.result('patchTrace', response),
      ...(serverLength !== undefined ? { serverLength } : {}),
      ...(buildStatus !== undefined ? { buildStatus } : {}),
    };
  }

  /** E7: uploads an archive from disk as a streamed multipart body (field `file`). */
  async uploadArtifacts(
    id: number,
    buildToken: string,
    file: { path: string; filename: string; expireIn?: string },
    signal?: AbortSignal,
  ): Promise<ApiResult & { body?: unknown }> {
    const url = new URL(`builds/${id}/artifacts`, this.baseUrl);
    if (file.expireIn) url.searchParams.set('expire_in', file.expireIn);
    const { size } = await stat(file.path);
    const multipart = multipartFileBody('file', file.filename, size, () => createReadStream(file.path));
    const response = await send(this.transport, {
      method: 'POST',
      url,
      headers: {
        'content-type': multipart.contentType,
        'content-length': String(multipart.length),
        'build-token': buildToken,
        'user-agent': USER_AGENT,
      },
      body: multipart.body,
      signal,
      headersTimeoutMs: this.requestTimeoutMs,
    });
    const result = this.result('uploadArtifacts', response);
    if (result.outcome !== 'ok') {
      await drain(response);
      return result;
    }
    return { ...result, body: await this.decodeJson(response) };
  }

  /**
   * E8: downloads a build's artifacts to `destination` (streamed; the file is written only on 200).
   * With `maxBytes`, a body that grows past it is cut off at once and reported as a retryable
   * failure, so a broken or hostile server cannot fill the disk. With `onChunk`, every chunk is
   * handed to it, in order, before it is written; the download waits for a returned promise
   * (backpressure), and a throw or rejection stops the download and is reported as a retryable
   * failure whose `error` is what was thrown (the caller knows best whether to retry).
   */
  async downloadArtifacts(
    id: number,
    buildToken: string,
    destination: string,
    signal?: AbortSignal,
    options: { maxBytes?: number; onChunk?: (chunk: Buffer) => void | Promise<void> } = {},
  ): Promise<ApiResult & { size?: number }> {
    const response = await send(this.transport, {
      method: 'GET',
      url: new URL(`builds/${id}/artifacts`, this.baseUrl),
      headers: { 'build-token': buildToken },
      signal,
      headersTimeoutMs: this.requestTimeoutMs,
    });
    const result = this.result('downloadArtifacts', response);
    if (result.outcome !== 'ok' || !response.body) {
      await drain(response);
      return result;
    }
    let size = 0;
    const limit = options.maxBytes ?? Number.POSITIVE_INFINITY;
    const onChunk = options.onChunk;
    const body = response.body;
    // One step between body and file, instead of a 'data' listener beside the pipe: it counts,
    // cuts off at the limit and feeds onChunk in the same order the bytes reach the file.
    async function* counted(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
      for await (const chunk of source) {
        size += chunk.byteLength;
        if (size > limit) throw new Error(`the artifacts body is larger than the announced ${limit} bytes`);
        if (onChunk) await onChunk(chunk);
        yield chunk;
      }
    }
    try {
      // A 1 MiB buffer lets the file stream gather the socket's 64 KiB pieces into fewer writes.
      await pipeline(body, counted, createWriteStream(destination, { highWaterMark: 1024 * 1024 }), signal ? { signal } : {});
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      return { status: TRANSPORT_ERROR, outcome: 'retry', error: error as Error, size };
    }
    return { ...result, size };
  }

  /** Closes the connection pools. */
  async close(): Promise<void> {
    this.transport.close();
  }

  private json(method: 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, signal?: AbortSignal, timeoutMs?: number): Promise<HttpResponse> {
    return send(this.transport, {
      method,
      url: new URL(path, this.baseUrl),
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': USER_AGENT },
      body: JSON.stringify(body),
      signal,
      headersTimeoutMs: timeoutMs ?? this.requestTimeoutMs,
    });
  }

  private result(endpoint: Endpoint, response: HttpResponse): ApiResult {
    return {
      status: response.status,
      outcome: classify(endpoint, response.status),
      ...(response.error ? { error: explainTransportError(response.error, this.baseUrl, this.tls) } : {}),
    };
  }

  private async readText(response: HttpResponse): Promise<string | undefined> {
    try {
      return await readText(response);
    } catch {
      return undefined;
    }
  }

  private async decodeJson(response: HttpResponse): Promise<unknown> {
    const text = await this.readText(response);
    if (text === undefined || text === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return undefined;
    }
  }
}
