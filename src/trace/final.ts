/**
 * The final update (docs/protocol-v1.md §7.6; docs/protocol-v4.md §8.6), the one path by which a job's end
 * reaches the server — a job that ran, one recovered after a restart, and one that could not run at
 * all (report-failed.ts). Retried (retry.ts) until the server has it (200) or refuses it for good
 * (401/403/404: the job is gone or was canceled). Unlike the legacy runner's endless retry (§12 item
 * 13), it gives up at a deadline and says so loudly; the delivery record lets a restarted runner try
 * again. The two APIs differ in what the update carries, and only there:
 * - v1: `PUT /builds/:id` with the state alone when the server has acknowledged the whole trace (the
 *   job's end tried to PATCH the tail first); otherwise with the whole trace, which replaces the
 *   server's copy, so bytes the live sender could not deliver are recovered here. If the server
 *   refuses that body as too large (413), the rest goes by PATCH and the state alone.
 * - v4: the rest of the trace goes by PATCH first (v4's update carries none), then
 *   `PUT /jobs/:id` with the state, the whole trace's CRC-32 and size, the failure reason (one the
 *   server accepts) and the exit code. A 202 ("accepted, not complete") is repeated after the
 *   server's interval, what it lacks sent first; a 412 (the server could not validate the trace)
 *   sends the whole trace again first.
 */
import type { ApiVersion, JobRef, JobUpdateResult, RunnerApi } from '../client/api.js';
import { retry, type RetryPolicy, type Step } from '../client/retry.js';
import { TRANSPORT_ERROR, worthRetrying } from '../client/retryable.js';
import type { Logger } from '../log/index.js';
import { supportedFailureReason, type FailureReason } from '../protocol/v4/failure-reason.js';
import { PrefixChecksum } from './checksum.js';
import { TraceSender } from './sender.js';
import type { TraceSource } from './source.js';

const RETRY_POLICY: RetryPolicy = { baseMs: 1_000, maxMs: 10_000 };
/**
 * With a failure limit, failures wait as GitLab Runner's do (from 1 s, doubling, up to an hour: the
 * limit ends it first); answers asking for the update again keep the short schedule.
 */
const LIMITED_RETRY_POLICY: RetryPolicy = { ...RETRY_POLICY, maxRetryAfterMs: 3_600_000 };
const limitedBackoffMs = (failures: number): number => Math.min(1_000 * 2 ** (failures - 1), 3_600_000);
/** How long the rest of a v4 trace may take to go out by PATCH before the state is sent anyway. */
const DRAIN_DEADLINE_MS = 10 * 60_000;

export { textTrace, type TraceSource } from './source.js';

/** Why a job failed, as v4's final update says it. */
export interface JobFailure {
  reason?: FailureReason;
  /** The script's exit code, when a script failed. */
  exitCode?: number;
}

export interface FinalUpdateOptions {
  client: RunnerApi;
  /** The API the job came by. */
  api: ApiVersion;
  job: JobRef;
  state: 'success' | 'failed';
  /** v4: why a failed job failed. */
  failure?: JobFailure;
  /** v4: the reasons the server accepts (the job's `features.failure_reasons`). */
  acceptedReasons?: readonly string[];
  trace: TraceSource;
  /** v4: the trace's checksum as far as it was summed while the trace was written (read from `trace` otherwise). */
  checksum?: PrefixChecksum;
  /** Bytes of the trace the server has already (what the live sender delivered). Default 0. */
  acknowledged?: number;
  /** Give up after this long. */
  deadlineMs: number;
  /**
   * Give up after this many failed attempts (GitLab Runner's `job_status_final_update_retry_limit`);
   * an answer asking for the same update again (v4's 202) is not a failure. Default: only the deadline.
   */
  failureLimit?: number;
  /** Deadline of each attempt. */
  requestTimeoutMs: number;
  /** Aborting stops retrying (the result is then `delivered: false`). */
  signal?: AbortSignal;
  logger: Logger;
  /** Called after each request with its status (-1 = transport error or timeout). */
  onAttempt?(status: number): void;
  /**
   * v1: called once when the server refuses the whole trace as too large (413), before the state
   * goes alone: delivers the trace's tail another way (PATCH), since the state-only update carries none.
   */
  beforeStateOnly?(): Promise<void>;
  /** The backoff between attempts (tests shorten it). */
  policy?: RetryPolicy;
  /** The first update waits for it (the delivery record naming the final state); v4's PATCHes of the rest of the trace do not. */
  ready?: Promise<void>;
}

export interface FinalUpdateResult {
  /** The server answered 200. */
  delivered: boolean;
  /** The last status (-1 = transport error, timeout, or never attempted). */
  status: number;
  /** The server refused for good (401/403/404, or v4's `Job-Status: canceled`): retrying later is pointless. */
  refused: boolean;
}

type Put = () => Promise<JobUpdateResult>;

/** Sends the final update; never rejects. */
export async function sendFinalUpdate(options: FinalUpdateOptions): Promise<FinalUpdateResult> {
  const { job, state, trace, logger } = options;
  const deadline = AbortSignal.timeout(options.deadlineMs);
  const stop = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  /** An earlier attempt got no answer (or an error after the server may have applied it). */
  let answerLost = false;
  let last: JobUpdateResult = { status: TRANSPORT_ERROR, outcome: 'retry' };

  const timed = async (call: (signal: AbortSignal) => Promise<JobUpdateResult>): Promise<JobUpdateResult> => {
    const attemptSignal = AbortSignal.any([stop, AbortSignal.timeout(options.requestTimeoutMs)]);
    try {
      last = await call(attemptSignal);
      if (last.error) logger.debug({ err: last.error }, 'final update transport error');
    } catch (error) {
      logger.debug({ err: error }, 'final update attempt aborted');
      last = { status: TRANSPORT_ERROR, outcome: 'retry', error: error as Error };
    }
    options.onAttempt?.(last.status);
    return last;
  };

  const protocol = options.api === 'v4' ? await v4Update(options, stop, timed) : v1Update(options, timed);

  let failures = 0;
  const attempt = async (n: number): Promise<Step<'delivered' | 'refused' | 'unmendable' | 'exhausted', JobUpdateResult>> => {
    await options.ready?.catch(() => undefined);
    const result = await protocol.put();
    if (result.outcome === 'ok') return { done: 'delivered' };
    if (result.cancel === 'now') {
      logger.warn({ status: result.status, buildId: job.id }, 'the server reports the job canceled; the final update is not taken');
      return { done: 'refused' };
    }
    const again = await protocol.repeat?.(result);
    if (again) return { failed: result, retryAfterMs: again.afterMs };
    if (result.outcome === 'final') {
      if (answerLost) {
        // The server only takes a final update for a running build: once an attempt whose answer was
        // lost is applied, the retry meets a finished build. Not a refusal of the job's result.
        logger.info({ status: result.status, buildId: job.id, attempt: n }, 'the final update was most likely applied by an earlier attempt whose answer was lost: the server no longer has the job running');
      } else logger.warn({ status: result.status, buildId: job.id }, 'the server refused the final update (the job was canceled or is gone)');
      return { done: 'refused' };
    }
    if (!worthRetrying(result)) return { done: 'unmendable' };
    failures += 1;
    if (options.failureLimit !== undefined && failures >= options.failureLimit) return { done: 'exhausted' };
    answerLost ||= result.status === TRANSPORT_ERROR || result.status >= 500;
    logger.warn({ status: result.status, buildId: job.id, attempt: n, err: result.error?.message }, 'final update failed; retrying');
    if (options.failureLimit === undefined) return { failed: result, retryAfterMs: result.retryAfterMs };
    return { failed: result, retryAfterMs: Math.max(result.retryAfterMs ?? 0, limitedBackoffMs(failures)) };
  };

  const policy = options.policy ?? (options.failureLimit !== undefined ? LIMITED_RETRY_POLICY : RETRY_POLICY);
  const end = await retry(attempt, { policy, signal: stop }).catch(() => undefined);
  if (end?.ok && end.value === 'delivered') return { delivered: true, status: last.status, refused: false };
  if (end?.ok && end.value === 'refused') return { delivered: false, status: last.status, refused: true };
  const why = !end?.ok
    ? 'the server did not accept it before the deadline (or the runner is shutting down)'
    : end.value === 'exhausted'
      ? `${failures} attempts failed (job_status_final_update_retry_limit)`
      : `it cannot be sent (${last.error?.message ?? 'transport error'})`;
  logger.error(
    { buildId: job.id, status: last.status, deadlineMs: options.deadlineMs },
    `gave up sending the final state "${state}" and trace of job ${job.id}: ${why}. ` +
      'The delivery record in the job state directory keeps it pending; a restarted runner can deliver it with resumeDelivery().',
  );
  return { delivered: false, status: last.status, refused: false };
}

interface ProtocolUpdate {
  /** One attempt of the update. */
  put: Put;
  /** An answer that asks for the same update again, and after how long (v4's 202 and 412). */
  repeat?(result: JobUpdateResult): Promise<{ afterMs?: number } | undefined>;
}

/** v1: the state alone when the server has the whole trace, else the whole trace in the update; after a 413 the tail by PATCH, then the state alone. */
function v1Update(options: FinalUpdateOptions, timed: (call: (signal: AbortSignal) => Promise<JobUpdateResult>) => Promise<JobUpdateResult>): ProtocolUpdate {
  const { client, job, state, trace, logger } = options;
  let withTrace = (options.acknowledged ?? 0) < trace.length;
  const once = (): Promise<JobUpdateResult> =>
    timed((signal) => (withTrace ? client.updateJobWithTrace(job, state, trace.text(trace.length), signal) : client.updateJob(job, { state }, signal)));
  return {
    put: async () => {
      const result = await once();
      if (result.status !== 413 || !withTrace) return result;
      logger.warn({ buildId: job.id, bytes: trace.length }, 'the server refuses a trace this large; sending the rest of it by PATCH, then the final state alone');
      withTrace = false;
      await options.beforeStateOnly?.();
      return once();
    },
  };
}

/** v4: the rest of the trace by PATCH, then the state with the trace's checksum and size. */
async function v4Update(options: FinalUpdateOptions, stop: AbortSignal, timed: (call: (signal: AbortSignal) => Promise<JobUpdateResult>) => Promise<JobUpdateResult>): Promise<ProtocolUpdate> {
  const { client, job, state, trace, logger } = options;
  // A sender of its own, under the final update's deadline: the live one stops with the daemon, and
  // the rest of the trace is owed all the same.
  const sender = new TraceSender({ client, api: 'v4', job, trace, startOffset: options.acknowledged ?? 0, updateIntervalMs: 1000, keepaliveIntervalMs: 30_000, requestTimeoutMs: options.requestTimeoutMs, signal: stop, logger });
  const drain = async (): Promise<void> => {
    const whole = await sender.drain(AbortSignal.any([stop, AbortSignal.timeout(DRAIN_DEADLINE_MS)]));
    if (!whole) logger.warn({ acknowledged: sender.acknowledged, length: trace.length }, 'could not deliver the rest of the trace by PATCH; the server keeps what it has');
  };
  // The whole trace's checksum: summed as the job wrote it (a live job), or else while its rest goes
  // out (the runner mostly waits on the server then), not after. A read that failed is done again by `put`.
  const checksum = options.checksum ?? new PrefixChecksum(trace);
  const summed = checksum.of(trace.length).then(
    () => undefined,
    () => undefined,
  );
  await drain();
  const failure = state === 'failed' ? options.failure : undefined;
  const failureReason = state === 'failed' ? supportedFailureReason(failure?.reason, options.acceptedReasons) : undefined;
  return {
    put: async () => {
      // The whole trace as the runner wrote it: a server that has less answers 202 until it has it all.
      await summed;
      const output = await checksum.of(trace.length);
      return timed((signal) =>
        client.updateJob(job, { state, output, ...(failureReason ? { failureReason } : {}), ...(failure?.exitCode ? { exitCode: failure.exitCode } : {}) }, signal),
      );
    },
    repeat: async (result) => {
      if (result.status === 202) {
        // Accepted, not complete: what the server still lacks goes first, then the same update again.
        if (sender.acknowledged < trace.length) await drain();
        return { afterMs: result.updateIntervalMs ?? result.retryAfterMs ?? 1000 };
      }
      if (result.status !== 412) return undefined;
      logger.warn({ buildId: job.id }, 'the server could not validate the trace (412); sending all of it again');
      sender.restart();
      await drain();
      return {};
    },
  };
}
