/**
 * The two artifact endpoints, both streamed so an archive is never held in memory: E7 uploads an
 * archive from disk as a multipart body, E8 downloads one straight to a file (docs/protocol-v1.md §4.7, §4.8).
 * The v4 endpoints (V10, V11) are the same exchange at other paths with other headers: the caller
 * names them in an `ArtifactRoute`. A v4 download may be redirected (object storage): the redirect is
 * followed once, without the job token.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { type ApiContext, type ApiResult, apiResult, decodeJson } from './api-call.js';
import { USER_AGENT } from './info.js';
import { multipartFileBody } from './multipart.js';
import { TRANSPORT_ERROR, type Endpoint } from './retryable.js';
import { drain, header, send, type HttpResponse } from './transport.js';

export interface ArtifactUpload {
  path: string;
  filename: string;
  expireIn?: string;
  /** v4: `archive` or a report type (`dotenv`, `junit`, …); v1 uploads archives only. */
  artifactType?: string;
  /** v4: `zip`, `gzip` or `raw`. */
  artifactFormat?: string;
  /** The whole upload's limit (`[runners.artifact] upload_timeout`); none when absent. */
  timeoutMs?: number;
  /** Time for the server's answer once the archive is sent (`response_header_timeout`); the client's default when absent. */
  responseHeaderTimeoutMs?: number;
}

/** Where an artifact call goes and how it authenticates (per API). */
export interface ArtifactRoute {
  url: URL;
  /** The job token header (v1 `BUILD-TOKEN`, v4 `JOB-TOKEN`). */
  headers: Record<string, string>;
  endpoint: Endpoint;
}

export interface ArtifactDownloadOptions {
  /** A body growing past this is cut off at once and reported as a retryable failure. */
  maxBytes?: number;
  /** Sees every chunk, in order, before it is written; a returned promise holds the download back. */
  onChunk?: (chunk: Buffer) => void | Promise<void>;
}

/** E7/V10: uploads `file` as field `file`; on success `body` is the server's decoded JSON answer. */
export async function uploadArtifactArchive(api: ApiContext, route: ArtifactRoute, file: ArtifactUpload, signal?: AbortSignal): Promise<ApiResult & { body?: unknown }> {
  const { size } = await stat(file.path);
  const multipart = multipartFileBody('file', file.filename, size, () => createReadStream(file.path));
  const response = await send(api.transport, {
    method: 'POST',
    url: route.url,
    headers: {
      'content-type': multipart.contentType,
      'content-length': String(multipart.length),
      ...route.headers,
      'user-agent': USER_AGENT,
    },
    body: multipart.body,
    signal,
    headersTimeoutMs: file.responseHeaderTimeoutMs ?? api.requestTimeoutMs,
    ...(file.timeoutMs !== undefined ? { deadlineMs: file.timeoutMs } : {}),
  });
  const result = apiResult(api, route.endpoint, response);
  if (result.outcome !== 'ok') {
    await drain(response);
    return result;
  }
  return { ...result, body: await decodeJson(response) };
}

/**
 * E8/V11: downloads a build's artifacts to `destination`; the file is written only on 200. A throw or
 * rejection from `onChunk` stops the download and is reported as a retryable failure whose `error`
 * is what was thrown (the caller knows best whether to retry).
 */
export async function downloadArtifactArchive(
  api: ApiContext,
  route: ArtifactRoute,
  destination: string,
  signal: AbortSignal | undefined,
  options: ArtifactDownloadOptions,
): Promise<ApiResult & { size?: number }> {
  let response = await send(api.transport, { method: 'GET', url: route.url, headers: route.headers, signal, headersTimeoutMs: api.requestTimeoutMs });
  response = await followRedirect(api, route, response, signal);
  const result = apiResult(api, route.endpoint, response);
  if (result.outcome !== 'ok' || !response.body) {
    await drain(response);
    return result;
  }
  let size = 0;
  const limit = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const onChunk = options.onChunk;
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
    await pipeline(response.body, counted, createWriteStream(destination, { highWaterMark: 1024 * 1024 }), signal ? { signal } : {});
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    return { status: TRANSPORT_ERROR, outcome: 'retry', error: error as Error, size };
  }
  return { ...result, size };
}

/**
 * A v4 download answered with a redirect to object storage (`direct_download`, docs/protocol-v4.md
 * §9.2): one GET there, without the job token (the URL carries its own signature). Other answers are
 * returned as they are.
 */
async function followRedirect(api: ApiContext, route: ArtifactRoute, response: HttpResponse, signal: AbortSignal | undefined): Promise<HttpResponse> {
  if (![301, 302, 303, 307, 308].includes(response.status)) return response;
  const location = header(response.headers, 'location');
  if (!location || !URL.canParse(location, route.url.href)) return response;
  await drain(response);
  return send(api.transport, { method: 'GET', url: new URL(location, route.url), signal, headersTimeoutMs: api.requestTimeoutMs });
}
