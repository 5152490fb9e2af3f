/**
 * A job's log for the web page. The live view is an event stream of the bytes past an offset: each
 * `append` event carries at most CHUNK bytes (cut on a UTF-8 character boundary) and has the offset
 * after it as its id, so a reconnecting EventSource resumes exactly where it stopped. A new viewer
 * of a long log starts at its tail, and one that falls far behind skips ahead: the browser never
 * gets more than it can show. The whole log is a separate download, streamed from disk, with
 * single `Range` support.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerContext } from '../context.js';
import type { Reply } from '../http/reply.js';
import { isFinished } from '../state/composite-status.js';
import type { BuildRecord } from '../state/store.js';
import { HEARTBEAT_MS, openEventStream, sendEvent, type ChangeHub } from './events.js';

/** What a new viewer is shown of a long log, and how far behind a viewer may fall before skipping. */
export const TAIL_BYTES = 512 * 1024;
const CHUNK = 64 * 1024;
/**
 * A canceled build still takes the runner's last parts (its "Job canceled" lines come after the
 * cancel), so a stream ends only once its build has been finished this long.
 */
export const LATE_BYTES_MS = 5000;

/** Bytes at the start of `bytes` that form whole UTF-8 characters (all of it when it ends on one). */
export function wholeUtf8Length(bytes: Buffer): number {
  const end = bytes.byteLength;
  for (let back = 1; back <= Math.min(4, end); back += 1) {
    const byte = bytes[end - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? end - back : end;
  }
  return end;
}

async function readRange(path: string, start: number, end: number): Promise<Buffer> {
  let file;
  try {
    file = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw error;
  }
  try {
    const buffer = Buffer.alloc(end - start);
    const { bytesRead } = await file.read(buffer, 0, buffer.byteLength, start);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** Where a viewer starts: a resumed one where it was, a new one at the start of a line near the tail. */
async function startOffset(ctx: ServerContext, build: BuildRecord, resume: number | undefined): Promise<number> {
  if (resume !== undefined && resume <= build.traceSize) return resume;
  if (build.traceSize <= TAIL_BYTES) return 0;
  const from = build.traceSize - TAIL_BYTES;
  const head = await readRange(ctx.traces.filePath(build.id), from, Math.min(build.traceSize, from + 4096));
  const newline = head.indexOf(0x0a);
  return newline >= 0 ? from + newline + 1 : from;
}

function resumeOffset(req: IncomingMessage, query: URLSearchParams): number | undefined {
  const header = req.headers['last-event-id'];
  const text = (Array.isArray(header) ? header[0] : header) ?? query.get('offset') ?? '';
  return /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

/** `GET /-/ui/api/jobs/:id/trace/events` */
export async function streamTrace(
  ctx: ServerContext,
  hub: ChangeHub,
  build: BuildRecord,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  let offset = await startOffset(ctx, build, resumeOffset(req, query));
  openEventStream(res);
  const decoder = new TextDecoder();
  let wake: (() => void) | undefined;
  const stopWatching = ctx.traces.watch((id) => {
    if (id === build.id) wake?.();
  });
  // A status change (the end of the job) comes without new bytes.
  const stopListening = hub.listen(() => wake?.());
  const beat = setInterval(() => wake?.(), HEARTBEAT_MS);
  const abort = (): void => wake?.();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await sendEvent(res, { event: 'start', id: String(offset), data: JSON.stringify({ offset, size: build.traceSize }) });
    while (!signal.aborted) {
      const size = build.traceSize;
      if (offset > size) {
        // The runner replaced the log with a shorter one: the page starts over.
        await sendEvent(res, { event: 'reset', data: '{}' });
        break;
      }
      if (size - offset > 2 * TAIL_BYTES) {
        offset = await startOffset(ctx, build, undefined);
        await sendEvent(res, { event: 'skip', id: String(offset), data: JSON.stringify({ offset, size }) });
        continue;
      }
      if (offset < size) {
        const bytes = await readRange(ctx.traces.filePath(build.id), offset, Math.min(size, offset + CHUNK));
        const whole = bytes.byteLength < CHUNK && offset + bytes.byteLength === size && isFinished(build.status) ? bytes.byteLength : wholeUtf8Length(bytes);
        if (whole > 0) {
          offset += whole;
          await sendEvent(res, { event: 'append', id: String(offset), data: JSON.stringify(decoder.decode(bytes.subarray(0, whole))) });
          continue;
        }
      }
      const finished = isFinished(build.status);
      const lateFor = finished ? (build.finishedAt?.getTime() ?? 0) + LATE_BYTES_MS - Date.now() : 0;
      if (finished && lateFor <= 0 && offset >= build.traceSize) {
        await sendEvent(res, { event: 'end', data: JSON.stringify({ status: build.status, size: build.traceSize }) });
        break;
      }
      const status = build.status;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (finished) timer = setTimeout(resolve, lateFor);
        if (signal.aborted || build.traceSize !== size || build.status !== status) resolve();
      });
      clearTimeout(timer);
      wake = undefined;
      if (!res.destroyed && build.traceSize === size) res.write(': keep-alive\n\n');
    }
  } finally {
    stopWatching();
    stopListening();
    clearInterval(beat);
    signal.removeEventListener('abort', abort);
    res.end();
  }
}

/** One `bytes=` range of `size` bytes: [start, end] inclusive, 'bad' when unsatisfiable, undefined when absent. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'bad' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return 'bad';
  if (match[1] === '') {
    const length = Math.min(Number(match[2]), size);
    return length === 0 ? 'bad' : { start: size - length, end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  return start >= size || end < start ? 'bad' : { start, end };
}

/** `GET /-/ui/api/jobs/:id/trace`: the whole log as a file (or one range of it). */
export function traceDownload(ctx: ServerContext, build: BuildRecord, req: IncomingMessage): Reply {
  const size = build.traceSize;
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'content-disposition': `attachment; filename="job-${build.id}.log"`,
    'accept-ranges': 'bytes',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  const range = parseRange(req.headers.range, size);
  if (range === 'bad') return { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` } };
  if (size === 0) return { status: 200, headers: { ...headers, 'content-length': '0' }, body: '' };
  const { start, end } = range ?? { start: 0, end: size - 1 };
  const path = ctx.traces.filePath(build.id);
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  headers['content-length'] = String(end - start + 1);
  return { status: range ? 206 : 200, headers, body: createReadStream(path, { start, end }) };
}
