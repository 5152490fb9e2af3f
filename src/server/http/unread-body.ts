/**
 * What happens to the part of a body the server chose not to read (a refused token, a 413, a route
 * that takes no body). Closing the socket at once would make the kernel answer the still-sending
 * client with a reset, which can destroy the reply it has not read yet; so the rest is discarded —
 * never stored — for a while, and the connection is cut only when the client goes on sending more
 * than a little or for too long (the "lingering close" of HTTP servers).
 */
import type { IncomingMessage } from 'node:http';

/** More unwanted bytes than this after the reply and the connection is cut. */
export const LINGER_BYTES = 4 * 1024 * 1024;
/** A client still sending this long after the reply is cut off. */
export const LINGER_MS = 5_000;

/** Call once the reply is written: discards the unread rest of `req`'s body, within the limits above. */
export function discardUnreadBody(req: IncomingMessage): void {
  if (req.readableEnded || req.complete || req.destroyed) return;
  let discarded = 0;
  const cut = (): void => {
    clearTimeout(timer);
    req.socket?.destroy();
  };
  const timer = setTimeout(cut, LINGER_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.byteLength;
    if (discarded > LINGER_BYTES) cut();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
