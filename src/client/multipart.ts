/**
 * A `multipart/form-data` body with one file part, streamed from disk. The length is known up front
 * (the archive is already on disk), so the request carries `Content-Length` and a retry simply opens
 * the file again — nothing is held in memory.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';

export interface MultipartBody {
  contentType: string;
  length: number;
  body: AsyncIterable<Uint8Array>;
}

/** Builds the body; `open` is called once, when the body is consumed. */
export function multipartFileBody(field: string, filename: string, size: number, open: () => Readable): MultipartBody {
  const boundary = `ci-runner-${randomBytes(12).toString('hex')}`;
  const safeName = filename.replace(/["\\\r\n]/g, '_');
  const head = Buffer.from(
    `--${boundary}\r\n` +
      `Content-Disposition: form-data; name="${field}"; filename="${safeName}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body(): AsyncGenerator<Uint8Array> {
    yield head;
    for await (const chunk of open()) yield chunk as Uint8Array;
    yield tail;
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, length: head.length + size + tail.length, body: body() };
}
