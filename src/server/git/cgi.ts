/**
 * A minimal CGI gateway (RFC 3875) for one program: request body streamed into its stdin, its response
 * head (`Status:` and headers) parsed, the body streamed out. Used to run `git http-backend`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { execa } from 'execa';
import type { Logger } from '../../log/index.js';

/** A CGI response head larger than this is a broken program, not a response. */
const MAX_HEAD_BYTES = 64 * 1024;

/** How much of the program's stderr is kept for the log. */
const MAX_STDERR_BYTES = 8 * 1024;

export interface CgiHead {
  status: number;
  headers: Array<[string, string]>;
  /** Body bytes that arrived with the head. */
  rest: Buffer;
}

/**
 * Splits a CGI response head from `data`, or returns undefined when the blank line ending it has not
 * arrived yet. Lines may end in CRLF or LF. `Status: 404 Not Found` sets the status (default 200).
 */
export function parseCgiHead(data: Buffer): CgiHead | undefined {
  const crlf = data.indexOf('\r\n\r\n');
  const lf = data.indexOf('\n\n');
  const candidates = [crlf === -1 ? undefined : { at: crlf, length: 4 }, lf === -1 ? undefined : { at: lf, length: 2 }];
  const end = candidates.filter((c) => c !== undefined).sort((a, b) => a.at - b.at)[0];
  if (end === undefined) return undefined;
  let status = 200;
  const headers: Array<[string, string]> = [];
  for (const line of data.subarray(0, end.at).toString('latin1').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') {
      const code = Number.parseInt(value, 10);
      if (code >= 100 && code <= 599) status = code;
    } else {
      headers.push([name, value]);
    }
  }
  return { status, headers, rest: data.subarray(end.at + end.length) };
}

/** Reads from `stream` until the CGI head is complete; undefined if the stream ends first or the head is too big. */
function readHead(stream: Readable): Promise<CgiHead | undefined> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const finish = (head: CgiHead | undefined): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onEnd);
      stream.pause();
      resolve(head);
    };
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const head = parseCgiHead(buffered);
      if (head !== undefined) finish(head);
      else if (buffered.length > MAX_HEAD_BYTES) finish(undefined);
    };
    const onEnd = (): void => finish(undefined);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onEnd);
  });
}

export interface CgiRequest {
  program: string;
  /** The complete environment of the program (nothing is inherited). */
  env: Record<string, string>;
  req: IncomingMessage;
  res: ServerResponse;
  /** Kills the program (SIGTERM, then SIGKILL) when aborted; the response is cut off. */
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Runs the program for one request and streams its response to `res`. Resolves when the response is
 * done or cut off; never rejects. A program that dies before sending a head gets a 502.
 */
export async function runCgi({ program, env, req, res, signal, logger }: CgiRequest): Promise<void> {
  const child = execa(program, [], {
    env,
    extendEnv: false,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    cancelSignal: signal,
    forceKillAfterDelay: 2000,
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < MAX_STDERR_BYTES) stderr += chunk.toString('utf8');
  });
  // The program may exit before reading the whole body (e.g. it refused the request): that is its answer.
  child.stdin.on('error', () => undefined);
  if (req.method === 'POST') req.pipe(child.stdin);
  else child.stdin.end();

  const head = await readHead(child.stdout);
  if (head === undefined) {
    const result = await child;
    logger.warn({ exitCode: result.exitCode, signal: result.signal, stderr: stderr.trim() }, 'git http-backend gave no response');
    if (!res.headersSent && !res.destroyed) {
      res.writeHead(502, { 'Content-Type': 'text/plain; charset=utf-8' }).end('git http-backend failed; see the server log\n');
    }
    return;
  }
  res.statusCode = head.status;
  for (const [name, value] of head.headers) res.appendHeader(name, value);
  if (head.rest.length > 0) res.write(head.rest);
  try {
    await pipeline(child.stdout, res);
  } catch (error) {
    logger.debug({ err: error }, 'git response cut off');
  }
  const result = await child;
  if (result.exitCode !== 0 && !signal.aborted) {
    logger.warn({ exitCode: result.exitCode, signal: result.signal, stderr: stderr.trim() }, 'git http-backend failed');
  }
}
