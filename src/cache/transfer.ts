/**
 * Moving a cache archive to and from the store with signed URLs, as GitLab Runner's cache-extractor
 * and cache-archiver do: a GET (404: there is no cache) to a temp file beside the local copy, renamed
 * over it and dated with the object's `Last-Modified`, or nothing when the local copy is that recent
 * already; a PUT of the local archive with `Content-Type: application/octet-stream`. Each request
 * may take `requestTimeoutMs` in all (CACHE_REQUEST_TIMEOUT); a network failure, a timeout or a 5xx
 * is tried twice more, a second apart; anything else is final. The requests go through the runner's
 * transport (its proxies and CAs, client/transport.ts). An error message names the URL without its
 * query, so no signature reaches a log.
 *
 * Azure takes one PUT up to a size; a larger blob goes up in blocks on the same SAS URL (Put Block,
 * then Put Block List), as its SDK and GitLab Runner's GoCloud upload do.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { drain, header, send, type HttpResponse, type Transport } from '../client/transport.js';
import { sleep } from '../util/timers.js';
import { CacheError, cleanUrl, type CacheErrorCode } from './errors.js';

/** A signed request: the URL (its query holds the signature) and the headers it was signed with. */
export interface SignedRequest {
  url: URL;
  headers: Readonly<Record<string, string>>;
}

export interface SignedUpload extends SignedRequest {
  /** Azure: a file over `singleMax` bytes goes up in blocks of `blockSize` on the same URL. */
  blocks?: { singleMax: number; blockSize: number };
}

export interface TransferOptions {
  transport: Transport;
  /** The whole of one request, body included (CACHE_REQUEST_TIMEOUT, in minutes there). */
  requestTimeoutMs: number;
  /** The job's signal: its abort is rethrown as it is, never turned into a warning. */
  signal: AbortSignal;
  /** Retries after the first try (GitLab Runner: 2). */
  retries?: number;
  retryDelayMs?: number;
  /** Most time to the response headers (GitLab Runner's ResponseHeaderTimeout: 30 s). */
  headersTimeoutMs?: number;
  /** Most time without a byte moving either way while a body flows. */
  stallTimeoutMs?: number;
  /** Told before each retry (a warning line in the job log). */
  onRetry?: (error: CacheError, attempt: number) => void;
}

export type DownloadOutcome =
  | { kind: 'downloaded'; bytes: number; etag?: string }
  /** The local copy is as recent as the object (its mtime is not before `Last-Modified`). */
  | { kind: 'up-to-date' }
  /** 404: no cache under this name. */
  | { kind: 'missing' };

const OCTET_STREAM = 'application/octet-stream';
/** Most of an error answer read for its `<Code>` and `<Message>`. */
const MAX_ERROR_BODY = 64 * 1024;

/** One object as the two requests that can date it: its signed GET, and a signed HEAD when the signer made one. */
export interface CacheSource {
  get: SignedRequest;
  head?: SignedRequest;
}

/**
 * Which of a key's two names (FF_HASH_CACHE_KEYS on and off) to download, as GitLab Runner 19's
 * cache-extractor chooses: the alternate when the primary cannot be dated (missing) and the alternate
 * can, or when the alternate is newer; else the primary. `line` is what the extractor logs for an alternate.
 */
export async function selectCacheSource(primary: CacheSource, alternate: CacheSource, options: TransferOptions): Promise<{ source: CacheSource; line?: string }> {
  const [primaryTime, alternateTime] = await Promise.all([cacheObjectTime(primary, options), cacheObjectTime(alternate, options)]);
  if (alternateTime === undefined) return { source: primary };
  if (primaryTime === undefined) return { source: alternate, line: 'Selecting alternate cache URL: primary not available' };
  if (alternateTime.getTime() > primaryTime.getTime()) return { source: alternate, line: 'Selecting alternate cache URL: newer timestamp' };
  return { source: primary };
}

/**
 * When the object was last modified: from its signed HEAD, else from a one-byte ranged GET (a signed GET
 * allows a Range, where a HEAD needs a signature of its own). Undefined when it is missing, undated or
 * cannot be asked: one try, as GitLab Runner's extractor falls back to the primary name on any error.
 */
async function cacheObjectTime(source: CacheSource, options: TransferOptions): Promise<Date | undefined> {
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.requestTimeoutMs)]);
  const req = source.head ? { method: 'HEAD' as const, url: source.head.url, headers: { ...source.head.headers } } : { method: 'GET' as const, url: source.get.url, headers: { ...source.get.headers, range: 'bytes=0-0' } };
  let response: HttpResponse;
  try {
    response = await request(options, signal, 'CACHE_DOWNLOAD_FAILED', req);
  } catch (error) {
    if (options.signal.aborted) throw options.signal.reason;
    if (error instanceof CacheError) return undefined;
    throw error;
  }
  // A store that ignores the Range answers 200 with the whole object: not read.
  discard(response);
  return response.status === 200 || response.status === 206 ? dateHeader(header(response.headers, 'last-modified')) : undefined;
}

/** GETs `req` into `file` (replaced atomically). Throws CacheError CACHE_DOWNLOAD_FAILED, or the job's abort reason. */
export async function downloadCacheFile(req: SignedRequest, file: string, options: TransferOptions): Promise<DownloadOutcome> {
  return withRetries(options, (signal) => downloadOnce(req, file, options, signal));
}

async function downloadOnce(req: SignedRequest, file: string, options: TransferOptions, signal: AbortSignal): Promise<DownloadOutcome> {
  const where = cleanUrl(req.url);
  const response = await request(options, signal, 'CACHE_DOWNLOAD_FAILED', { method: 'GET', url: req.url, headers: { ...req.headers } });
  if (response.status === 404) {
    await drain(response);
    return { kind: 'missing' };
  }
  if (response.status < 200 || response.status > 299 || !response.body) throw await statusError('CACHE_DOWNLOAD_FAILED', where, response);
  const lastModified = dateHeader(header(response.headers, 'last-modified'));
  if (lastModified && (await localMtime(file)) >= lastModified.getTime()) {
    discard(response);
    return { kind: 'up-to-date' };
  }
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.${randomBytes(6).toString('hex')}.download`;
  let bytes = 0;
  async function* counted(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      bytes += chunk.byteLength;
      yield chunk;
    }
  }
  try {
    await pipeline(response.body, counted, createWriteStream(temp, { mode: 0o600, highWaterMark: 1024 * 1024 }), { signal });
    if (lastModified) await utimes(temp, new Date(), lastModified);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw transferFailure('CACHE_DOWNLOAD_FAILED', where, error, signal, options);
  }
  const etag = header(response.headers, 'etag');
  return { kind: 'downloaded', bytes, ...(etag ? { etag } : {}) };
}

/** PUTs `file` to `req`. Throws CacheError CACHE_UPLOAD_FAILED, or the job's abort reason. */
export async function uploadCacheFile(req: SignedUpload, file: string, options: TransferOptions): Promise<void> {
  const { size, mtime } = await stat(file);
  const headers = {
    'content-type': OCTET_STREAM,
    ...lowerKeys(req.headers),
    'content-length': String(size),
    'last-modified': mtime.toUTCString(),
  };
  if (req.blocks && size > req.blocks.singleMax) {
    await uploadBlocks(req, file, size, req.blocks.blockSize, options);
    return;
  }
  await withRetries(options, (signal) => put(req.url, headers, () => createReadStream(file, { highWaterMark: 1024 * 1024 }), options, signal));
}

async function put(url: URL, headers: Record<string, string>, body: () => Readable | string, options: TransferOptions, signal: AbortSignal): Promise<void> {
  const response = await request(options, signal, 'CACHE_UPLOAD_FAILED', { method: 'PUT', url, headers, body: body() });
  if (response.status < 200 || response.status > 299) throw await statusError('CACHE_UPLOAD_FAILED', cleanUrl(url), response);
  await drain(response);
}

/** Azure's block upload: each block retried on its own, then the list committed with the signed headers. */
async function uploadBlocks(req: SignedUpload, file: string, size: number, blockSize: number, options: TransferOptions): Promise<void> {
  const ids: string[] = [];
  for (let offset = 0, index = 0; offset < size; offset += blockSize, index += 1) {
    const id = Buffer.from(String(index).padStart(6, '0')).toString('base64');
    const length = Math.min(blockSize, size - offset);
    const url = withQuery(req.url, { comp: 'block', blockid: id });
    const range = { start: offset, end: offset + length - 1, highWaterMark: 1024 * 1024 };
    await withRetries(options, (signal) => put(url, { 'content-length': String(length) }, () => createReadStream(file, range), options, signal));
    ids.push(id);
  }
  const list = `<?xml version="1.0" encoding="utf-8"?><BlockList>${ids.map((id) => `<Latest>${id}</Latest>`).join('')}</BlockList>`;
  const commit: Record<string, string> = { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(list)), 'x-ms-blob-content-type': OCTET_STREAM };
  for (const [name, value] of Object.entries(lowerKeys(req.headers))) if (name.startsWith('x-ms-meta-')) commit[name] = value;
  await withRetries(options, (signal) => put(withQuery(req.url, { comp: 'blocklist' }), commit, () => list, options, signal));
}

/** One request under its own deadline; a transport failure becomes a retryable CacheError. */
async function request(options: TransferOptions, signal: AbortSignal, code: CacheErrorCode, req: { method: 'GET' | 'HEAD' | 'PUT'; url: URL; headers: Record<string, string>; body?: Readable | string }): Promise<HttpResponse> {
  let response: HttpResponse;
  try {
    response = await send(options.transport, {
      ...req,
      signal,
      headersTimeoutMs: options.headersTimeoutMs ?? 30_000,
      bodyTimeoutMs: options.stallTimeoutMs ?? 60_000,
    });
  } catch (error) {
    throw transferFailure(code, cleanUrl(req.url), error, signal, options);
  }
  if (response.status === -1) throw transferFailure(code, cleanUrl(req.url), response.error, signal, options);
  return response;
}

/** Runs `attempt` with a fresh per-request deadline, up to `retries` more times for a retryable failure. */
async function withRetries<T>(options: TransferOptions, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const retries = options.retries ?? 2;
  for (let tried = 0; ; tried += 1) {
    const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.requestTimeoutMs)]);
    try {
      return await attempt(signal);
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (!(error instanceof CacheError) || !error.retryable || tried >= retries) throw error;
      options.onRetry?.(error, tried + 1);
      await sleep(options.retryDelayMs ?? 1000, options.signal);
    }
  }
}

/** The job's abort as it is; a deadline, a network or a file error as a CacheError (retryable but for a file error). */
function transferFailure(code: CacheErrorCode, where: string, error: unknown, signal: AbortSignal, options: TransferOptions): unknown {
  if (options.signal.aborted) return options.signal.reason;
  if (error instanceof CacheError) return error;
  if (signal.aborted) {
    return new CacheError(code, `${where}: no complete answer within ${Math.round(options.requestTimeoutMs / 1000)} s (CACHE_REQUEST_TIMEOUT)`, { cause: error, retryable: true });
  }
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  const local = errno === 'ENOSPC' || errno === 'EDQUOT' || errno === 'EACCES' || errno === 'EROFS';
  return new CacheError(code, `${where}: ${(error as Error)?.message ?? String(error)}`, { cause: error, retryable: !local });
}

/** GitLab Runner's wording of an error answer: `received: 403 Forbidden. Request failed with code: …, message: …`. */
async function statusError(code: CacheErrorCode, where: string, response: HttpResponse): Promise<CacheError> {
  const text = await readSome(response);
  // One line each, whatever the store put in them (Azure's message runs over three).
  const errorCode = /<Code>([^<]*)<\/Code>/.exec(text)?.[1]?.replace(/\s+/g, ' ').trim().slice(0, 200);
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1]?.replace(/\s+/g, ' ').trim().slice(0, 500);
  const parts = [errorCode ? `code: ${errorCode}` : '', message ? `message: ${message}` : ''].filter((part) => part !== '').join(', ');
  const status = `${response.status} ${STATUS_CODES[response.status] ?? ''}`.trim();
  return new CacheError(code, `${where}: received: ${status}${parts ? `. Request failed with ${parts}` : ''}`, { retryable: response.status >= 500 });
}

async function readSome(response: HttpResponse): Promise<string> {
  const body = response.body;
  if (!body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_ERROR_BODY) break;
    }
  } catch {
    // What arrived is enough for a message.
  } finally {
    discard(response);
  }
  return Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY).toString('utf8');
}

/** Drops a body unread (the connection with it): its abort is not an error anyone waits for. */
function discard(response: HttpResponse): void {
  response.body?.on('error', () => undefined).destroy();
}

async function localMtime(file: string): Promise<number> {
  return stat(file).then((stats) => (stats.isFile() ? stats.mtimeMs : Number.NEGATIVE_INFINITY), () => Number.NEGATIVE_INFINITY);
}

function dateHeader(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** `url` with `params` appended; its own query (the signature) is kept byte for byte. */
function withQuery(url: URL, params: Record<string, string>): URL {
  const extra = Object.entries(params).map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  return new URL(`${url.origin}${url.pathname}${url.search ? `${url.search}&` : '?'}${extra}`);
}

function lowerKeys(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
