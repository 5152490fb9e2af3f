/**
 * Buffering a request body in steps: read until a condition, pause, decide, read on. The request
 * stays paused between steps, so bytes the server has not decided to take wait in the kernel and
 * TCP pushes back on the client.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './reply.js';

export type CollectOutcome = 'ended' | 'stopped' | 'over';

export class BodyCollector {
  private chunks: Buffer[] = [];
  private held = 0;
  private done = false;

  constructor(private readonly req: IncomingMessage) {}

  /** Bytes buffered so far. */
  get size(): number {
    return this.held;
  }

  get ended(): boolean {
    return this.done;
  }

  /** The buffered bytes as one buffer (the collector lets go of its chunks). */
  take(): Buffer {
    const body = Buffer.concat(this.chunks, this.held);
    this.chunks = [];
    return body;
  }

  /**
   * Reads until the body ends ('ended'), `stop` returns true for a chunk ('stopped'), or more than
   * `max` bytes are buffered ('over'). Rejects with 499 when `signal` aborts and 400 on a read error.
   */
  readUntil(max: number, signal: AbortSignal, stop?: (chunk: Buffer) => boolean): Promise<CollectOutcome> {
    const { req } = this;
    if (this.done || req.readableEnded) {
      this.done = true;
      return Promise.resolve('ended');
    }
    return new Promise<CollectOutcome>((resolve, reject) => {
      const finish = (outcome: CollectOutcome | Error): void => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        signal.removeEventListener('abort', onAbort);
        if (outcome !== 'ended') req.pause();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onData = (chunk: Buffer): void => {
        this.chunks.push(chunk);
        this.held += chunk.byteLength;
        if (this.held > max) finish('over');
        else if (stop?.(chunk)) finish('stopped');
      };
      const onEnd = (): void => {
        this.done = true;
        finish('ended');
      };
      const onError = (error: Error): void => finish(new HttpError(400, `could not read the request body: ${error.message}`));
      const onAbort = (): void => finish(new HttpError(499, 'client went away'));
      if (signal.aborted) {
        onAbort();
        return;
      }
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
      signal.addEventListener('abort', onAbort, { once: true });
      req.resume();
    });
  }
}

/** The declared Content-Length, or undefined for a chunked body. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const value = req.headers['content-length'];
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}
