/** Writing a `Reply` to the socket: normally, or cut off mid-body for the `close` fault. */
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Reply } from './reply.js';

/** Writes `reply` unless the client is already gone. */
export async function writeReply(res: ServerResponse, reply: Reply): Promise<void> {
  if (res.destroyed || res.headersSent) {
    if (reply.body instanceof Readable) reply.body.destroy();
    return;
  }
  const headers = { ...reply.headers };
  if (reply.body instanceof Readable) {
    res.writeHead(reply.status, headers);
    await pipeline(reply.body, res).catch(() => undefined);
    return;
  }
  const body = reply.body === undefined ? undefined : Buffer.from(reply.body);
  if (body !== undefined && reply.status !== 204 && reply.status !== 304) headers['content-length'] = String(body.byteLength);
  res.writeHead(reply.status, headers);
  res.end(reply.status === 204 || reply.status === 304 ? undefined : body);
}

/**
 * Sends the headers and at most half the body, promising more with Content-Length, then destroys
 * the socket: the client sees a response that breaks off (fault action `close`).
 */
export function writeCutReply(res: ServerResponse, reply: Reply): void {
  if (reply.body instanceof Readable) reply.body.destroy();
  const full = reply.body === undefined || reply.body instanceof Readable ? Buffer.from('{}') : Buffer.from(reply.body);
  if (res.destroyed || res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.status !== 204) headers['content-length'] = String(full.byteLength + 64);
  res.writeHead(reply.status, headers);
  const part = full.subarray(0, Math.floor(full.byteLength / 2));
  if (part.byteLength > 0 && reply.status !== 204) res.write(part);
  else res.flushHeaders();
  // Let the written bytes reach the socket, then cut it.
  setImmediate(() => res.socket?.destroy());
}
