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
 * Sends the headers and at most half the body, promising all of it with Content-Length, then
 * destroys the socket: the client sees a response that breaks off (fault action `close`).
 */
export function writeCutReply(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.headersSent) {
    if (reply.body instanceof Readable) reply.body.destroy();
    res.destroy();
    return;
  }
  const cut = (): void => {
    // Let the written bytes reach the socket, then cut it.
    setImmediate(() => res.socket?.destroy());
  };
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.body instanceof Readable) {
    const stream = reply.body;
    const half = Math.floor(Number(headers['content-length'] ?? 0) / 2);
    res.writeHead(reply.status, headers);
    res.flushHeaders();
    let sent = 0;
    stream.on('data', (chunk: Buffer) => {
      const room = half - sent;
      if (room > 0) res.write(chunk.subarray(0, room));
      sent += Math.min(room, chunk.byteLength);
      if (sent >= half) {
        stream.destroy();
        cut();
      }
    });
    stream.on('end', cut);
    stream.on('error', cut);
    if (half === 0) {
      stream.destroy();
      cut();
    }
    return;
  }
  const full = reply.body === undefined ? Buffer.from('{}') : Buffer.from(reply.body);
  if (reply.status !== 204) headers['content-length'] = String(full.byteLength + 64);
  res.writeHead(reply.status, headers);
  const part = full.subarray(0, Math.floor(full.byteLength / 2));
  if (part.byteLength > 0 && reply.status !== 204) res.write(part);
  else res.flushHeaders();
  cut();
}
