/**
 * One command in a container over the exec WebSocket (`@kubernetes/client-node`'s Exec), with its
 * exit code from the status channel.
 *
 * Standard input: Kubernetes before 1.29 (channel protocol v4) has no way to say "end of input"
 * other than closing the socket, which also loses the status frame and so the exit code. Input is
 * therefore sent as exactly `size` bytes the command knows to expect (`head -c <size> | tar -x`), and
 * the socket stays open until the status arrives. The bytes are framed on channel 0 here rather than
 * by the library, so each frame waits for the socket to take the previous one (the library's own
 * stdin pump has no backpressure: a 50 MB tree would sit in memory).
 *
 * Output: each frame goes to `stdout`/`stderr`; when a stream refuses more (its buffer is full), the
 * socket is paused until it drains, so a slow consumer never makes memory grow.
 */
import { createReadStream } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { Exec, type V1Status } from '@kubernetes/client-node';
import { CiRunnerError } from '../../util/errors.js';
import { apiError } from './api.js';
import type { Connection } from './connection.js';

/** The exec connection failed, or ended without the command's status. */
export class PodExecError extends CiRunnerError {
  /**
   * The connection ended before the status came: the command may have run to its end or not, and the
   * tail of its output may be missing. Only a command that may run twice can simply be run again.
   */
  readonly statusLost: boolean;

  constructor(message: string, options?: { cause?: unknown; statusLost?: boolean }) {
    super('KUBERNETES_EXEC', message, options);
    this.statusLost = options?.statusLost ?? false;
  }
}

export interface ExecTarget {
  namespace: string;
  pod: string;
  container: string;
}

export interface ExecRequest {
  command: string[];
  /** A file sent as standard input, `size` bytes exactly. */
  input?: { path: string; size: number };
  /** Standard input attached but nothing sent: the command can wait on it until the connection closes. */
  holdStdin?: boolean;
  stdout: Writable;
  stderr: Writable;
  /** Closes the connection (the command itself goes on: stopping it is the caller's business). */
  signal?: AbortSignal;
}

export interface ExecResult {
  exitCode: number;
}

/** What is used of the `ws` WebSocket the library connects (its types are not installed). */
interface Socket {
  readonly readyState: number;
  readonly OPEN: number;
  send(data: Buffer, callback: (error?: Error) => void): void;
  pause(): void;
  resume(): void;
  terminate(): void;
  once(event: 'close', listener: (code: number, reason: Buffer) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
}

/** Largest stdin frame. */
const FRAME_BYTES = 256 * 1024;

/** Runs the command; resolves with its exit code, rejects when no status came. */
export async function podExec(connection: Connection, target: ExecTarget, request: ExecRequest): Promise<ExecResult> {
  request.signal?.throwIfAborted();
  let socket: Socket | undefined;
  let status: V1Status | undefined;
  const paused = new Set<Writable>();
  let received = 0;
  const forward = (to: Writable): Writable =>
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (!to.write(chunk) && socket && !paused.has(to)) {
          paused.add(to);
          socket.pause();
          to.once('drain', () => {
            paused.delete(to);
            if (paused.size === 0) socket?.resume();
          });
        }
        callback();
      },
    });
  const exec = new Exec(connection.config);
  // A stdin stream that never delivers: it makes the library ask for stdin; an input's bytes go through pump().
  const stdin = request.input || request.holdStdin ? new Readable({ read() {} }) : null;
  try {
    socket = (await exec.exec(target.namespace, target.pod, target.container, request.command, forward(request.stdout), forward(request.stderr), stdin, false, (s) => {
      status = s;
    })) as unknown as Socket;
  } catch (error) {
    throw apiError(`exec in pod ${target.pod}`, unwrapEvent(error), connection.server);
  }
  const ws = socket;
  const closed = new Promise<string>((resolve) => ws.once('close', (code, reason) => resolve(`WebSocket code ${code}${reason.length > 0 ? ` "${reason.toString('utf8')}"` : ''}`)));
  let failure: unknown;
  let howClosed = '';
  ws.on('error', (error) => (failure ??= error));
  const onAbort = (): void => ws.terminate();
  request.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (request.input) await pump(ws, request.input, request.signal).catch((error: unknown) => (failure ??= error));
    howClosed = await closed;
  } finally {
    request.signal?.removeEventListener('abort', onAbort);
  }
  request.signal?.throwIfAborted();
  if (!status) {
    const why = failure ? `: ${(failure as Error).message}` : '';
    throw new PodExecError(`the exec connection to pod ${target.pod} closed (${howClosed}, after ${received} bytes of output) before the command's exit status came${why}`, { cause: failure, statusLost: true });
  }
  return { exitCode: exitCodeOf(status, target) };
}

/** Sends the file on channel 0, one frame at a time; stops quietly when the socket closes first. */
async function pump(ws: Socket, input: { path: string; size: number }, signal: AbortSignal | undefined): Promise<void> {
  let sent = 0;
  const file = createReadStream(input.path, { highWaterMark: FRAME_BYTES, ...(signal ? { signal } : {}) });
  for await (const chunk of file as AsyncIterable<Buffer>) {
    if (ws.readyState !== ws.OPEN) return;
    const frame = Buffer.allocUnsafe(chunk.length + 1);
    frame[0] = 0;
    chunk.copy(frame, 1);
    await new Promise<void>((resolve, reject) => ws.send(frame, (error?: Error) => (error ? reject(error) : resolve())));
    sent += chunk.length;
  }
  if (sent !== input.size) throw new PodExecError(`${input.path} changed while it was sent (${sent} bytes, expected ${input.size})`);
}

/** 0 for Success; the code of a NonZeroExitCode; anything else is an error (container gone, …). */
function exitCodeOf(status: V1Status, target: ExecTarget): number {
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = Number.parseInt(cause?.message ?? '', 10);
    if (Number.isInteger(code)) return code;
  }
  throw new PodExecError(`exec in pod ${target.pod}, container ${target.container} failed: ${status.message ?? status.reason ?? 'unknown error'}`);
}

/** The WebSocket library rejects with an ErrorEvent; its `error` is the real one. */
function unwrapEvent(error: unknown): unknown {
  const inner = (error as { error?: unknown } | undefined)?.error;
  return inner instanceof Error ? inner : error;
}
