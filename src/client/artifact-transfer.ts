/**
 * The two artifact endpoints, both streamed so an archive is never held in memory: E7 uploads an
 * archive from disk as a multipart body, E8 downloads one straight to a file (docs/protocol-v1.md §4.7, §4.8).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { type ApiContext, type ApiResult, apiResult, decodeJson } from './api-call.js';
import { USER_AGENT } from './info.js';
import { multipartFileBody } from './multipart.js';
import { TRANSPORT_ERROR } from './retryable.js';
import { drain, send } from './transport.js';

export interface ArtifactUpload {
  path: string;
  filename: string;
  expireIn?: string;
}

export interface ArtifactDownloadOptions {
  /** A body growing past this is cut off at once and reported as a retryable failure. */
  maxBytes?: number;
  /** Sees every chunk, in order, before it is written; a returned promise holds the download back. */
  onChunk?: (chunk: Buffer) => void | Promise<void>;
}

/** E7: uploads `file` as field `file`; on success `body` is the server's decoded JSON answer. */
export async function uploadArtifactArchive(
  api: ApiContext,
  id: number,
  buildToken: string,
  file: ArtifactUpload,
  signal?: AbortSignal,
): Promise<ApiResult & { body?: unknown }> {
  const url = new URL(`builds/${id}/artifacts`, api.baseUrl);
  if (file.expireIn) url.searchParams.set('expire_in', file.expireIn);
  const { size } = await stat(file.path);
  const multipart = multipartFileBody('file', file.filename, size, () => createReadStream(file.path));
  const response = await send(api.transport, {
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
    headersTimeoutMs: api.requestTimeoutMs,
  });
  const result = apiResult(api, 'uploadArtifacts', response);
  if (result.outcome !== 'ok') {
    await drain(response);
    return result;
  }
  return { ...result, body: await decodeJson(response) };
}

/**
 * E8: downloads a build's artifacts to `destination`; the file is written only on 200. A throw or
 * rejection from `onChunk` stops the download and is reported as a retryable failure whose `error`
 * is what was thrown (the caller knows best whether to retry).
 */
export async function downloadArtifactArchive(
  api: ApiContext,
  id: number,
  buildToken: string,
  destination: string,
  signal: AbortSignal | undefined,
  options: ArtifactDownloadOptions,
): Promise<ApiResult & { size?: number }> {
  const response = await send(api.transport, {
    method: 'GET',
    url: new URL(`builds/${id}/artifacts`, api.baseUrl),
    headers: { 'build-token': buildToken },
    signal,
    headersTimeoutMs: api.requestTimeoutMs,
  });
  const result = apiResult(api, 'downloadArtifacts', response);
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
