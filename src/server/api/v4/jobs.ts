/**
 * V7 `PUT /jobs/:id` (docs/protocol-v4.md §5): keep-alives (`state=running`) and the final state. A final
 * update whose `output.bytesize` is more than the server has stored is answered 202 with a back-off
 * until the trace is complete (the runner repeats the same PUT), for at most `TRACE_WAIT_MS`; then
 * the job finishes anyway and the gap is logged, as GitLab does after its wait.
 */
import type { ServerContext } from '../../context.js';
import { stringParam, type Params } from '../../http/body.js';
import { errorReply, type Reply } from '../../http/reply.js';
import { acceptedFailureReason } from '../../state/failure-reasons.js';
import { noteJobContact } from '../../state/runner-contact.js';
import type { BuildRecord } from '../../state/store.js';
import { finishReported } from '../../state/transitions.js';
import { readParams, type ApiRequest } from '../request.js';
import { authenticateJob, jobGate, jobStatus, jobTokenOf, updateIntervalHeader } from './auth.js';

/** How long a final update may wait for the rest of its trace. */
export const TRACE_WAIT_MS = 60_000;
/** The longest back-off a 202 asks for, in seconds. */
const MAX_BACKOFF_S = 16;

/** Final updates answered 202 so far, by build: since when, and how many times. */
const waiting = new WeakMap<BuildRecord, { since: number; tries: number }>();

function answer(ctx: ServerContext, status: number, build: BuildRecord, headers: Record<string, string> = {}): Reply {
  return { status, headers: { 'content-type': 'text/plain', 'job-status': jobStatus(build), ...updateIntervalHeader(ctx), ...headers }, body: String(status) };
}

/** `output.bytesize`/`output.checksum` (or the older top-level `checksum`), when the runner sent them. */
function traceOutput(params: Params): { bytesize?: number; checksum?: string } {
  const output = params.output !== null && typeof params.output === 'object' && !Array.isArray(params.output) ? (params.output as Params) : {};
  const bytesize = typeof output.bytesize === 'number' && Number.isSafeInteger(output.bytesize) && output.bytesize >= 0 ? output.bytesize : undefined;
  const checksum = stringParam(output, 'checksum') ?? stringParam(params, 'checksum');
  return { ...(bytesize !== undefined ? { bytesize } : {}), ...(checksum !== undefined ? { checksum } : {}) };
}

/**
 * Seconds the runner should wait before repeating its final update, or undefined when the stored
 * trace is complete (or has been waited for long enough). A complete trace whose checksum differs is
 * only logged.
 */
function traceBackoff(ctx: ServerContext, build: BuildRecord, output: { bytesize?: number; checksum?: string }, now = Date.now()): number | undefined {
  if (output.bytesize === undefined) return undefined;
  if (build.traceSize >= output.bytesize) {
    waiting.delete(build);
    const stored = ctx.traces.receivedChecksum(build.id, build.traceSize);
    if (build.traceSize !== output.bytesize || (stored !== undefined && output.checksum !== undefined && stored !== output.checksum)) {
      ctx.logger.warn({ buildId: build.id, stored: { bytes: build.traceSize, checksum: stored }, runner: output }, 'the trace the runner reports differs from the one stored');
    }
    return undefined;
  }
  const state = waiting.get(build) ?? { since: now, tries: 0 };
  if (now - state.since >= TRACE_WAIT_MS) {
    waiting.delete(build);
    ctx.logger.warn({ buildId: build.id, stored: build.traceSize, reported: output.bytesize }, 'finishing a job whose trace never arrived whole');
    return undefined;
  }
  state.tries += 1;
  waiting.set(build, state);
  return Math.min(2 ** (state.tries - 1), MAX_BACKOFF_S);
}

export async function updateJob(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, jobGate(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const auth = authenticateJob(ctx, request, jobTokenOf(request, params));
  if (!auth.ok) return auth.reply;
  const { build } = auth;
  build.lastActivityAt = Date.now();
  noteJobContact(ctx.store, build);
  const state = params.state;
  if (state === 'running') return answer(ctx, 200, build);
  if (state !== 'success' && state !== 'failed') {
    return errorReply(400, `400 Bad Request - state ${JSON.stringify(state ?? null)} is not one of running, success, failed`);
  }
  const exitCode = params.exit_code;
  if (exitCode !== undefined && exitCode !== null && !(typeof exitCode === 'number' && Number.isInteger(exitCode))) {
    return errorReply(400, '400 Bad Request - exit_code is invalid: an integer is expected');
  }
  const backoff = traceBackoff(ctx, build, traceOutput(params));
  if (backoff !== undefined) {
    return answer(ctx, 202, build, { 'x-gitlab-trace-update-interval': String(backoff), 'retry-after': String(backoff) });
  }
  await finishReported(ctx, build, state, {
    ...(state === 'failed' ? { failureReason: acceptedFailureReason(params.failure_reason) } : {}),
    // GitLab keeps it in a smallint column.
    ...(typeof exitCode === 'number' ? { exitCode: Math.max(-32768, Math.min(32767, exitCode)) } : {}),
  });
  return answer(ctx, 200, build);
}
