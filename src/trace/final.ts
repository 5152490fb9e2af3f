/**
 * The final update (PROTOCOL.md §7.6): `PUT /builds/:id` with the job's state and the whole trace,
 * which replaces the server's copy — so bytes the live sender could not deliver are recovered here.
 * Retried with backoff until 200 (delivered) or 401/403/404 (refused: the build is gone or was
 * canceled). Unlike the legacy runner's endless retry (§12 item 13), it gives up at a deadline and
 * says so loudly; the delivery record lets a restarted runner try again. If the server refuses the
 * body as too large (413), the state goes alone: the server keeps what the live PATCHes delivered.
 */
import { backoffDelay, sleep } from '../client/backoff.js';
import type { Outcome } from '../client/retryable.js';
import type { RunnerApiClient } from '../client/runner-api.js';
import type { Logger } from '../log.js';
import type { SentTrace } from './view.js';

const RETRY_BACKOFF = { baseMs: 1_000, maxMs: 10_000 };

export interface FinalUpdateOptions {
  client: RunnerApiClient;
  buildId: number;
  runnerToken: string;
  state: 'success' | 'failed';
  trace: SentTrace;
  /** Give up after this long. */
  deadlineMs: number;
  /** Deadline of each attempt. */
  requestTimeoutMs: number;
  /** Aborting stops retrying (the result is then `delivered: false`). */
  signal?: AbortSignal;
  logger: Logger;
  /** Called after each attempt with its status (-1 = transport error or timeout). */
  onAttempt?(status: number): void;
  /**
   * Called once when the server refuses the whole trace as too large (413), before the state goes
   * alone: delivers the trace's tail another way (PATCH), since the state-only update carries none.
   */
  beforeStateOnly?(): Promise<void>;
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
  let status = -1;
  let outcome: Outcome = 'retry';
  let withTrace = true;
  /** An earlier attempt got no answer (or an error after the server may have applied it). */
  let answerLost = false;
  for (let attempt = 0; !stop.aborted; attempt++) {
    const length = trace.length;
    try {
      const attemptSignal = AbortSignal.any([stop, AbortSignal.timeout(options.requestTimeoutMs)]);
      const result = withTrace
        ? await client.updateBuildWithTrace(buildId, runnerToken, state, trace.text(length), attemptSignal)
        : await client.updateBuild(buildId, runnerToken, { state }, attemptSignal);
      status = result.status;
      outcome = result.outcome;
      if (result.error) logger.debug({ err: result.error }, 'final update transport error');
    } catch (error) {
      status = -1;
      outcome = 'retry';
      logger.debug({ err: error }, 'final update attempt aborted');
    }
    options.onAttempt?.(status);
    if (outcome === 'ok') return { delivered: true, status, refused: false };
    if (outcome === 'final') {
      if (answerLost) {
        // The server only takes a final update for a running build: once an attempt whose answer was
        // lost is applied, the retry meets a finished build. Not a refusal of the job's result.
        logger.info({ status, buildId, attempt }, 'the final update was most likely applied by an earlier attempt whose answer was lost: the server no longer has the job running');
      } else logger.warn({ status, buildId }, 'the server refused the final update (the job was canceled or is gone)');
      return { delivered: false, status, refused: true };
    }
    answerLost ||= status === -1 || status >= 500;
    if (status === 413 && withTrace) {
      logger.warn({ buildId, bytes: length }, 'the server refuses a trace this large; sending the rest of it by PATCH, then the final state alone');
      withTrace = false;
      await options.beforeStateOnly?.();
      continue;
    }
    logger.warn({ status, buildId, attempt }, 'final update failed; retrying');
    try {
      await sleep(backoffDelay(attempt, RETRY_BACKOFF), stop);
    } catch {
      break;
    }
  }
  logger.error(
    { buildId, status, deadlineMs: options.deadlineMs },
    `gave up sending the final state "${state}" and trace of job ${buildId}: the server did not accept it ` +
      'before the deadline (or the runner is shutting down). The delivery record in the job state directory ' +
      'keeps it pending; a restarted runner can deliver it with resumeDelivery().',
  );
  return { delivered: false, status, refused: false };
}
