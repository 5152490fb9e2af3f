/**
 * Change notices for the web page. Every change the store records passes its sink; the hub sits in
 * front of the durable sink, and after the current turn of the event loop (when a change and the
 * ones it ripples into are all applied) tells its listeners once. Pages then fetch the small JSON
 * they show; logs travel their own stream (`trace-stream.ts`).
 */
import type { ServerResponse } from 'node:http';
import type { StoreSink } from '../state/store.js';

/** Comment lines keep proxies and the browser from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;

export class ChangeHub {
  private readonly listeners = new Set<() => void>();
  private scheduled = false;
  private seq = 0;

  /** A sink that records through `inner` (if any) and then announces a change. */
  wrap(inner: StoreSink | undefined): StoreSink {
    const after = <T extends unknown[]>(call: ((...args: T) => void) | undefined) => (...args: T): void => {
      call?.(...args);
      this.changed();
    };
    return {
      runner: after(inner?.runner.bind(inner)),
      runnerDeleted: after(inner?.runnerDeleted.bind(inner)),
      project: after(inner?.project.bind(inner)),
      pipeline: after(inner?.pipeline.bind(inner)),
      build: after(inner?.build.bind(inner)),
    };
  }

  /** Announces a change (coalesced with others of the same turn). */
  changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.seq += 1;
      for (const listener of [...this.listeners]) listener();
    });
  }

  get sequence(): number {
    return this.seq;
  }

  /** Calls `listener` after each change until the returned function is called. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Starts an event stream on `res`. */
export function openEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    'x-content-type-options': 'nosniff',
  });
  res.flushHeaders();
}

/** Writes one event; resolves when the socket has room for more (backpressure). */
export function sendEvent(res: ServerResponse, event: { event?: string; id?: string; data: string }): Promise<void> {
  let text = '';
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  if (event.event !== undefined) text += `event: ${event.event}\n`;
  for (const line of event.data.split('\n')) text += `data: ${line}\n`;
  text += '\n';
  if (res.write(text)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * `GET /-/ui/api/events`: one `change` event per coalesced change, until the client goes away or
 * the server closes.
 */
export async function streamChanges(hub: ChangeHub, res: ServerResponse, signal: AbortSignal): Promise<void> {
  openEventStream(res);
  await sendEvent(res, { event: 'hello', data: String(hub.sequence) });
  await new Promise<void>((resolve) => {
    const stop = hub.listen(() => void sendEvent(res, { event: 'change', data: String(hub.sequence) }));
    const beat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    const end = (): void => {
      stop();
      clearInterval(beat);
      resolve();
    };
    if (signal.aborted) end();
    else signal.addEventListener('abort', end, { once: true });
  });
  res.end();
}
