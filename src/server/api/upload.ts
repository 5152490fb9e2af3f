/**
 * Receiving an artifacts upload (E7, API v4's V10): a multipart body parsed as a stream, its one
 * `file` part written to a temp file under the data dir — never held in memory — and answered 413 the
 * moment it reaches the size limit. A request makes at most one temp file, and whatever becomes of it
 * (stored, refused before or after its file streamed, too big, a second `file` part, cut off by the
 * client or by the server closing) the temp file is renamed into place or removed: nothing a client
 * sends stays in the temp area.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { ServerContext } from '../context.js';
import { PRE_AUTH_LIMIT } from '../http/guarded-body.js';
import { errorReply, type Reply } from '../http/reply.js';
import { PRIVATE_FILE_MODE } from '../state/private-files.js';
import type { BuildRecord } from '../state/store.js';
import type { ApiRequest } from './request.js';

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

/** The `file` part being written: its temp file, and when the writing has stopped. */
interface StoredPart {
  tempPath: string;
  out: WriteStream;
  filename: string;
  size: number;
  written: Promise<void>;
}

/**
 * Streams the one `file` part of a multipart upload into a temp file and hands the complete file to
 * `complete`. `lateCheck`, when the token was not known up front, checks the form's `token` field
 * before any file byte is stored. A second `file` part is refused (400); parts of other names are
 * read and dropped.
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
    let fileParts = 0;
    let opening: Promise<void> | undefined;
    let part: StoredPart | undefined;
    let settled = false;
    const settle = (reply: Reply, keepFile = false): void => {
      if (settled) return;
      settled = true;
      if (!keepFile && part) discard(part);
      req.unpipe();
      req.resume(); // discard the rest of the body; nothing more is stored
      resolve(reply);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { fields: 50, fieldSize: 64 * 1024, parts: 100 } });
    } catch (error) {
      settle(errorReply(400, `400 Bad Request - malformed multipart body: ${(error as Error).message}`));
      return;
    }
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (settled || name !== 'file') {
        stream.resume();
        return;
      }
      fileParts += 1;
      if (fileParts > 1) {
        stream.resume();
        settle(errorReply(400, '400 Bad Request - more than one "file" part: an upload carries exactly one archive'));
        return;
      }
      const refused = lateCheck?.(fields.token);
      if (refused) {
        stream.resume();
        settle(refused);
        return;
      }
      opening = ctx.artifacts.tempPath().then(
        (tempPath) => {
          // Refused or cut off while the temp dir was made: no file is created at all.
          if (settled) {
            stream.resume();
            return;
          }
          part = storePart(stream, tempPath, info.filename || 'artifacts.zip', limit, () => settle(errorReply(413)));
        },
        (error: unknown) => {
          stream.resume();
          ctx.logger.error({ err: error, buildId: build.id }, 'could not create the upload file');
          settle(errorReply(500));
        },
      );
    });
    parser.on('error', (error: Error) => settle(errorReply(400, `400 Bad Request - malformed multipart body: ${error.message}`)));
    parser.on('close', () => {
      void Promise.resolve(opening)
        .then(() => part?.written)
        .then(async () => {
          if (settled) return;
          if (!part) {
            settle(lateCheck?.(fields.token) ?? errorReply(400, '400 (Bad request) "file" not given'));
            return;
          }
          const { reply, keep } = await complete({ tempPath: part.tempPath, filename: part.filename, size: part.size, fields });
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

/** Writes `stream` to a new private file at `tempPath`; past `limit` bytes it stops writing and calls `tooBig`. */
function storePart(stream: Readable, tempPath: string, filename: string, limit: number, tooBig: () => void): StoredPart {
  const out = createWriteStream(tempPath, { mode: PRIVATE_FILE_MODE });
  const part: StoredPart = { tempPath, out, filename, size: 0, written: Promise.resolve() };
  part.written = new Promise<void>((done, fail) => {
    out.on('error', fail);
    out.on('finish', done);
    out.on('close', done); // destroyed before finishing: nothing more will be written
  });
  stream.on('data', (chunk: Buffer) => {
    part.size += chunk.byteLength;
    if (part.size >= limit) {
      stream.unpipe(out);
      out.end();
      stream.resume();
      tooBig();
    }
  });
  stream.pipe(out);
  return part;
}

/** Stops writing `part` and removes its file once the stream has let go of it. */
function discard(part: StoredPart): void {
  part.out.destroy(); // a cut upload never finishes its file; do not wait for it
  void part.written
    .catch(() => undefined)
    .then(() => rm(part.tempPath, { force: true }))
    .catch(() => undefined);
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
