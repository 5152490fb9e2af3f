/**
 * E7 upload, E8 download, E9 delete of a build's artifacts (docs/protocol-v1.md §4.7–§4.9, §8.4). Uploads are
 * parsed as a stream (chunked or with Content-Length) and written to a temp file under the data dir;
 * the moment the file part reaches the size limit the server answers 413 and stops storing — an
 * upload is never held in memory.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import busboy from 'busboy';
import type { ServerContext } from '../context.js';
import { applyDotenvReport } from '../state/dotenv-report.js';
import { parseDurationSeconds } from '../../util/duration.js';
import { PRE_AUTH_LIMIT } from '../http/guarded-body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { buildPayload } from './payload.js';
import { liveArtifacts } from '../state/artifacts.js';
import { PRIVATE_FILE_MODE } from '../state/private-files.js';
import type { BuildRecord } from '../state/store.js';
import { buildGate, buildTokenOf, readParams, type ApiRequest } from './request.js';

function access(build: BuildRecord, token: string | undefined): Reply | undefined {
  if (token !== build.token) return errorReply(403);
  return undefined;
}

/** `expire_in` → expiry date; `null` for none/never; `undefined` when it is not a duration. */
export function expiryFrom(value: string | undefined, now = Date.now()): Date | null | undefined {
  if (value === undefined || value.trim() === '' || /^\s*never\s*$/i.test(value)) return null;
  const seconds = parseDurationSeconds(value);
  return seconds === undefined ? undefined : new Date(now + seconds * 1000);
}

interface Upload {
  tempPath: string;
  out?: WriteStream;
  filename: string;
  size: number;
  written: Promise<void>;
}

/** A complete upload in its temp file, and the form fields that came with it. */
export interface ReceivedFile {
  tempPath: string;
  filename: string;
  size: number;
  fields: Readonly<Record<string, string>>;
}

/**
 * What an API does with a complete upload. The temp file is removed after it unless `keep` (it was
 * moved into place).
 */
export type UploadHandler = (file: ReceivedFile) => Promise<{ reply: Reply; keep: boolean }>;

export async function uploadArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const upfront = buildTokenOf(request);
  const check = (token: string | undefined): Reply | undefined =>
    access(build, token) ?? (build.status === 'running' ? undefined : errorReply(403, '403 Forbidden  - Build is not running!'));
  if (upfront !== undefined) {
    const refused = check(upfront);
    if (refused) return refused;
  }
  const type = request.req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(type)) return upfront === undefined ? errorReply(403) : errorReply(400, '400 Bad Request - expected a multipart/form-data body with a "file" part');
  return receiveUpload(ctx, request, build, upfront === undefined ? check : undefined, async (file) => {
    const expireIn = request.query.get('expire_in') ?? file.fields.expire_in;
    const expireAt = expiryFrom(expireIn);
    if (expireAt === undefined) return { reply: badExpiry(expireIn), keep: false };
    await ctx.artifacts.commit(build, file.tempPath, file.filename, file.size, expireAt);
    ctx.logger.info({ buildId: build.id, size: file.size }, 'artifacts stored');
    await applyDotenvReport(ctx, build);
    return { reply: json(201, buildPayload(ctx, build)), keep: true };
  });
}

/** 400 for an `expire_in` that is not a duration. */
export function badExpiry(expireIn: string | undefined): Reply {
  return errorReply(400, `400 Bad Request - expire_in "${expireIn}" is not a duration (try "1 week", "3 days", "2h20min")`);
}

/**
 * Streams the `file` part of a multipart upload into a temp file (413 the moment it reaches the
 * size limit) and hands the complete file to `complete`. `lateCheck`, when the token was not known
 * up front, checks the form's `token` field before any file byte is stored.
 */
export function receiveUpload(
  ctx: ServerContext,
  request: ApiRequest,
  build: BuildRecord,
  lateCheck: ((token: string | undefined) => Reply | undefined) | undefined,
  complete: UploadHandler,
): Promise<Reply> {
  const { req } = request;
  const limit = ctx.settings.maxArtifactsSize;
  return new Promise<Reply>((resolve) => {
    const fields: Record<string, string> = {};
    const pending: Array<Promise<void>> = [];
    let upload: Upload | undefined;
    let settled = false;
    const settle = (reply: Reply, keepFile = false): void => {
      if (settled) return;
      settled = true;
      if (!keepFile && upload) {
        const path = upload.tempPath;
        upload.out?.destroy(); // a cut upload never finishes its file; do not wait for it
        void upload.written.catch(() => undefined).finally(() => rm(path, { force: true }));
      }
      req.unpipe();
      req.resume(); // discard the rest of the body; nothing more is stored
      resolve(reply);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fields: 50, fieldSize: 64 * 1024, parts: 100 } });
    } catch (error) {
      settle(errorReply(400, `400 Bad Request - malformed multipart body: ${(error as Error).message}`));
      return;
    }
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (settled || name !== 'file' || upload) {
        stream.resume();
        return;
      }
      const refused = lateCheck?.(fields.token);
      if (refused) {
        stream.resume();
        settle(refused);
        return;
      }
      const started = ctx.artifacts.tempPath().then((tempPath) => {
        const current: Upload = { tempPath, filename: info.filename || 'artifacts.zip', size: 0, written: Promise.resolve() };
        upload = current;
        current.written = new Promise<void>((done, fail) => {
          const out = createWriteStream(tempPath, { mode: PRIVATE_FILE_MODE });
          current.out = out;
          out.on('error', fail);
          out.on('finish', done);
          out.on('close', done); // destroyed before finishing: nothing more will be written
          stream.on('data', (chunk: Buffer) => {
            current.size += chunk.byteLength;
            if (current.size >= limit) {
              stream.unpipe(out);
              out.end();
              stream.resume();
              settle(errorReply(413));
            }
          });
          stream.pipe(out);
        });
      });
      pending.push(
        started.catch((error: unknown) => {
          stream.resume();
          ctx.logger.error({ err: error, buildId: build.id }, 'could not create the upload file');
          settle(errorReply(500));
        }),
      );
    });
    parser.on('error', (error: Error) => settle(errorReply(400, `400 Bad Request - malformed multipart body: ${error.message}`)));
    parser.on('close', () => {
      void Promise.all(pending)
        .then(() => upload?.written)
        .then(async () => {
          if (settled) return;
          if (!upload) {
            settle(lateCheck?.(fields.token) ?? errorReply(400, '400 (Bad request) "file" not given'));
            return;
          }
          const { reply, keep } = await complete({ tempPath: upload.tempPath, filename: upload.filename, size: upload.size, fields });
          settle(reply, keep);
        })
        .catch((error: unknown) => {
          ctx.logger.error({ err: error, buildId: build.id }, 'storing artifacts failed');
          settle(errorReply(500));
        });
    });
    request.signal.addEventListener('abort', () => settle(errorReply(400, 'upload cut off')), { once: true });
    if (lateCheck) boundUntilFile(req, parser, () => settle(errorReply(403, `403 Forbidden - no token in the BUILD-TOKEN header, the query string or the first ${PRE_AUTH_LIMIT / 1024} KiB of the body`)));
    req.pipe(parser);
  });
}

/**
 * Without a token up front, the form fields before the `file` part are all that is read before the
 * token is checked: more than `PRE_AUTH_LIMIT` bytes of them and the upload is refused.
 */
function boundUntilFile(req: ApiRequest['req'], parser: busboy.Busboy, refuse: () => void): void {
  let received = 0;
  const count = (chunk: Buffer): void => {
    received += chunk.byteLength;
    if (received > PRE_AUTH_LIMIT) {
      stop();
      refuse();
    }
  };
  const stop = (): void => {
    req.off('data', count);
  };
  req.on('data', count);
  parser.once('file', stop);
  parser.once('close', stop);
}

export async function downloadArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const refused = access(build, buildTokenOf(request));
  if (refused) return refused;
  return artifactsFileReply(build);
}

/** The stored archive of `build` (E8 and the admin API), or 404 when it is absent or expired. */
export function artifactsFileReply(build: BuildRecord): Reply {
  const artifacts = liveArtifacts(build);
  if (!artifacts) return errorReply(404, '404 Not Found - no artifacts (absent or expired)');
  return {
    status: 200,
    headers: {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename=${artifacts.filename}`,
      'content-transfer-encoding': 'binary',
      'content-length': String(artifacts.size),
    },
    body: createReadStream(artifacts.path),
  };
}

export async function deleteArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const read = await readParams(ctx, request, buildGate(request, build.token));
  if (!read.ok) return read.reply;
  const refused = access(build, buildTokenOf(request, read.params));
  if (refused) return refused;
  await ctx.artifacts.remove(build);
  return json(200, {});
}
