/**
 * The final update (docs/protocol-v1.md §7.6), the one path by which a job's end reaches the server — a job
 * that ran, one recovered after a restart, and one that could not run at all (report-failed.ts):
 * `PUT /builds/:id` with the state and the whole trace, which replaces the server's copy, so bytes
 * the live sender could not deliver are recovered here. Retried (retry.ts) until 200 (delivered) or
 * 401/403/404 (refused: the build is gone or was canceled). Unlike the legacy runner's endless retry
 * (§12 item 13), it gives up at a deadline and says so loudly; the delivery record lets a restarted
 * runner try again. If the server refuses the body as too large (413), the state goes alone: the
 * server keeps what the live PATCHes delivered.
 */
import type { ApiResult } from '../client/api-call.js';
import { retry, type RetryPolicy, type Step } from '../client/retry.js';
import { TRANSPORT_ERROR, worthRetrying } from '../client/retryable.js';
import type { RunnerApiClient } from '../client/runner-api.js';
import type { Logger } from '../log/index.js';

const RETRY_POLICY: RetryPolicy = { baseMs: 1_000, maxMs: 10_000 };

/** The trace a final update carries: its length in bytes and its text up to a length. */
export interface FinalTrace {
  readonly length: number;
  text(length: number): AsyncIterable<string>;
}

/** A short trace held in memory (a job that never ran has only a few lines to say why). */
export function textTrace(text: string): FinalTrace {
  return {
    length: Buffer.byteLength(text),
    async *text() {
      yield text;
    },
  };
}

export interface FinalUpdateOptions {
  client: RunnerApiClient;
  buildId: number;
  runnerToken: string;
  state: 'success' | 'failed';
  trace: FinalTrace;
  /** Give up after this long. */
  deadlineMs: number;
  /** Deadline of each attempt. */
  requestTimeoutMs: number;
  /** Aborting stops retrying (the result is then `delivered: false`). */
  signal?: AbortSignal;
  logger: Logger;
  /** Called after each request with its status (-1 = transport error or timeout). */
  onAttempt?(status: number): void;
  /**
   * Called once when the server refuses the whole trace as too large (413), before the state goes
   * alone: delivers the trace's tail another way (PATCH), since the state-only update carries none.
   */
  beforeStateOnly?(): Promise<void>;
  /** The backoff between attempts (tests shorten it). */
  policy?: RetryPolicy;
}

export interface FinalUpdateResult {
  /** The server answered 200. */
  delivered: boolean;
  /** The last status (-1 = transport error, timeout, or never attempted). */
  status: number;
  /** The server refused for good (401/403/404): retrying later is pointless. */
  refused: boolean;
}

/** Sends the final update; never rejects. */
export async function sendFinalUpdate(options: FinalUpdateOptions): Promise<FinalUpdateResult> {
  const { client, buildId, runnerToken, state, trace, logger } = options;
  const deadline = AbortSignal.timeout(options.deadlineMs);
  const stop = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  let withTrace = true;
  /** An earlier attempt got no answer (or an error after the server may have applied it). */
  let answerLost = false;
  let last: ApiResult = { status: TRANSPORT_ERROR, outcome: 'retry' };

  const put = async (): Promise<ApiResult> => {
    const attemptSignal = AbortSignal.any([stop, AbortSignal.timeout(options.requestTimeoutMs)]);
    try {
      const result = withTrace
        ? await client.updateBuildWithTrace(buildId, runnerToken, state, trace.text(trace.length), attemptSignal)
        : await client.updateBuild(buildId, runnerToken, { state }, attemptSignal);
      if (result.error) logger.debug({ err: result.error }, 'final update transport error');
      last = result;
    } catch (error) {
      logger.debug({ err: error }, 'final update attempt aborted');
      last = { status: TRANSPORT_ERROR, outcome: 'retry', error: error as Error };
    }
    options.onAttempt?.(last.status);
    return last;
  };

  const attempt = async (n: number): Promise<Step<'delivered' | 'refused' | 'unmendable', ApiResult>> => {
    let result = await put();
    if (result.status === 413 && withTrace) {
      logger.warn({ buildId, bytes: trace.length }, 'the server refuses a trace this large; sending the rest of it by PATCH, then the final state alone');
      withTrace = false;
      await options.beforeStateOnly?.();
      result = await put();
    }
    if (result.outcome === 'ok') return { done: 'delivered' };
    if (result.outcome === 'final') {
      if (answerLost) {
        // The server only takes a final update for a running build: once an attempt whose answer was
        // lost is applied, the retry meets a finished build. Not a refusal of the job's result.
        logger.info({ status: result.status, buildId, attempt: n }, 'the final update was most likely applied by an earlier attempt whose answer was lost: the server no longer has the job running');
      } else logger.warn({ status: result.status, buildId }, 'the server refused the final update (the job was canceled or is gone)');
      return { done: 'refused' };
    }
    if (!worthRetrying(result)) return { done: 'unmendable' };
    answerLost ||= result.status === TRANSPORT_ERROR || result.status >= 500;
    logger.warn({ status: result.status, buildId, attempt: n, err: result.error?.message }, 'final update failed; retrying');
    return { failed: result, retryAfterMs: result.retryAfterMs };
  };

  const end = await retry(attempt, { policy: options.policy ?? RETRY_POLICY, signal: stop }).catch(() => undefined);
  if (end?.ok && end.value === 'delivered') return { delivered: true, status: last.status, refused: false };
  if (end?.ok && end.value === 'refused') return { delivered: false, status: last.status, refused: true };
  const why = end?.ok ? `it cannot be sent (${last.error?.message ?? 'transport error'})` : 'the server did not accept it before the deadline (or the runner is shutting down)';
  logger.error(
    { buildId, status: last.status, deadlineMs: options.deadlineMs },
    `gave up sending the final state "${state}" and trace of job ${buildId}: ${why}. ` +
      'The delivery record in the job state directory keeps it pending; a restarted runner can deliver it with resumeDelivery().',
  );
  return { delivered: false, status: last.status, refused: false };
}
