/**
 * The live trace sender (docs/protocol-v1.md §7.2–§7.5; docs/protocol-v4.md §8): a cursor over the sent
 * trace, never a copy of it.
 *
 * When a request goes out is pacing.ts's: new output at once when idle, then in batches every update
 * interval, as PATCHes of at most MAX_PATCH_BYTES (looping until caught up); while a whole part of that
 * size is waiting (a burst), whole parts go out back to back (the same PATCHes, sooner: the server gets
 * no more requests than it would). When nothing is new, a keep-alive every keep-alive interval is the
 * cancellation probe: an empty PATCH on v1, a `running` PUT with the trace's checksum on v4 (v4 never
 * sends an empty PATCH). The server's `X-GitLab-Trace-Update-Interval` paces both (how fast a cancel
 * of a silent job is seen is the server's choice). 202 moves the cursor to the end it sent; 416 moves it to the
 * server's length (a 416 is a lost ack, not an error); a 404 switches v1 to full-trace PUTs for the
 * rest of the job (§7.5) and ends a v4 job; failures retry from the same offset with backoff. A
 * cancel in an answer (`cancel`: v1 `Build-Status`, v4 `Job-Status`) is passed on, graceful or not.
 * Nothing is skipped or sent twice: the cursor only moves on what the server says it has.
 */
import type { ApiVersion, CancelRequest, JobRef, RunnerApi } from '../client/api.js';
import { retry, type Step } from '../client/retry.js';
import type { Logger } from '../log/index.js';
import { PrefixChecksum } from './checksum.js';
import { JobAbortedError } from './errors.js';
import { RETRY_POLICY, TracePacer, type PendingWork } from './pacing.js';
import type { TraceSource } from './source.js';
import type { MarkStep } from '../util/timeline.js';

/**
 * Largest PATCH body: a runner far behind catches up in several requests, none of them large to retry.
 * v4 keeps GitLab Runner's 1 MiB (GitLab's limit); v1's server takes 64 MiB bodies, so a burst goes in
 * 8 MiB parts (GitLab Runner 1.11 sent the whole unsent tail in one).
 */
export const MAX_PATCH_BYTES: Readonly<Record<ApiVersion, number>> = { v1: 8 * 1024 * 1024, v4: 1024 * 1024 };
/** Consecutive 416s within one tick before it counts as a failure (then backoff, fresh round-trip). */
const MAX_MISMATCHES = 2;
/** Failed PATCH rounds `drain` tolerates before giving up on the tail. */
const DRAIN_ATTEMPTS = 8;

export interface SenderOptions {
  client: RunnerApi;
  /** The API the job came by (a detecting client may not know it yet when a delivery is resumed). */
  api: ApiVersion;
  job: JobRef;
  trace: TraceSource;
  /** Bytes the server has already (a resumed delivery). Default 0. */
  startOffset?: number;
  updateIntervalMs: number;
  keepaliveIntervalMs: number;
  /** Deadline of each request. */
  requestTimeoutMs: number;
  /** Stops the sender and aborts its in-flight request (daemon shutdown). */
  signal: AbortSignal;
  logger: Logger;
  /** The server canceled or failed the job, or refused it (403): the job must stop. */
  onAbort?(reason: JobAbortedError): void;
  /** The server has the sent trace up to `offset`. */
  onAck?(offset: number): void;
  /** The job's timeline (`--debug`): the first accepted PATCH is a step of it. */
  mark?: MarkStep;
}

type TickResult = 'ok' | 'failed';

export class TraceSender {
  private sentOffset: number;
  private mode: 'incremental' | 'full' = 'incremental';
  private runningSent = false;
  /** Refused by the server: nothing more is sent live (the final update still goes out). */
  private halted = false;
  /** The server refused a full trace as too large (413): full mode only probes with state PUTs. */
  private fullTooLarge = false;
  /** The server's `Retry-After` on the last answer, in ms. */
  private retryAfterMs: number | undefined;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly pacer: TracePacer;
  private readonly work: PendingWork = {
    news: () => this.hasNews(),
    halted: () => this.halted,
    partWaiting: () => this.partWaiting(),
    stopped: () => this.stopping,
  };
  private readonly checksum: PrefixChecksum;

  constructor(private readonly options: SenderOptions) {
    this.sentOffset = options.startOffset ?? 0;
    this.pacer = new TracePacer(options.updateIntervalMs, options.keepaliveIntervalMs);
    this.checksum = new PrefixChecksum(options.trace);
  }

  /** Bytes the server acknowledged. */
  get acknowledged(): number {
    return this.sentOffset;
  }

  /** The interval the server asked for last (or the configured one): v4 repeats a 202 final update after it. */
  get interval(): number {
    return this.pacer.interval;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Tells an idle sender that output arrived. Cheap enough to call on every write. */
  notify(): void {
    this.pacer.notify(this.work);
  }

  /** Stops the loop after its in-flight request (if any) completes. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.pacer.interrupt();
    await this.loop;
  }

  /** Sends the whole trace again from its start (a v4 server that could not validate it: 412). */
  restart(): void {
    this.sentOffset = 0;
    this.halted = false;
  }

  /**
   * After `stop()`: delivers what the server does not have yet by PATCH, until it has all of it, the
   * deadline passes or the server keeps failing. For a v1 final update whose whole trace the server
   * refuses as too large (413), and before every v4 final update (v4's carries no trace).
   * Returns whether the server has the whole trace. `attempts`: failed rounds tolerated.
   */
  async drain(deadline: AbortSignal, attempts = DRAIN_ATTEMPTS): Promise<boolean> {
    const pending = (): boolean =>
      this.mode === 'incremental' && !this.halted && this.sentOffset < this.options.trace.length && !deadline.aborted && !this.options.signal.aborted;
    const step = async (): Promise<Step<undefined, undefined>> => {
      while (pending()) {
        const result: TickResult = await this.tick().catch(() => 'failed' as const);
        if (result === 'failed') return { failed: undefined, retryAfterMs: this.retryAfterMs };
      }
      return { done: undefined };
    };
    await retry(step, { policy: { ...RETRY_POLICY, attempts: attempts + 1 }, signal: deadline }).catch(() => undefined);
    return this.sentOffset >= this.options.trace.length;
  }

  private async run(): Promise<void> {
    const { signal, logger } = this.options;
    while (!this.stopping && !signal.aborted) {
      const due = await this.pacer.next(this.work, signal);
      if (this.stopping || signal.aborted || this.halted) continue;
      let result: TickResult;
      try {
        result = await this.tick(due === 'part');
      } catch (error) {
        if (signal.aborted) break;
        logger.warn({ err: error }, 'trace update failed; retrying');
        result = 'failed';
      }
      this.pacer.roundEnded(result === 'ok', this.retryAfterMs);
    }
  }

  private hasNews(): boolean {
    if (this.mode === 'full' && this.fullTooLarge) return false;
    const length = this.options.trace.length;
    return this.mode === 'full' ? length !== this.sentOffset : length > this.sentOffset;
  }

  /** A whole PATCH part of new output is waiting (incremental mode only: a full PUT resends it all). */
  private partWaiting(): boolean {
    return this.mode === 'incremental' && !this.halted && this.options.trace.length - this.sentOffset >= MAX_PATCH_BYTES[this.options.api];
  }

  /** One round of requests; `wholeParts`: PATCH only whole parts, while there are (a burst's). */
  private async tick(wholeParts = false): Promise<TickResult> {
    const { client, api, job, trace, logger } = this.options;
    if (this.mode === 'full') return this.sendFull();
    if (api === 'v1' && !this.runningSent) {
      // §6.2: `running` once, before the first PATCH; its answer is ignored (§12 item 14).
      const result = await this.request((signal) => client.updateJob(job, { state: 'running' }, signal));
      this.runningSent = true;
      if (result?.status !== 200) logger.debug({ status: result?.status ?? -1 }, 'state update "running" not accepted');
    }
    const target = trace.length;
    if (api === 'v4' && target <= this.sentOffset) return this.keepAlive();
    let mismatches = 0;
    do {
      const start = this.sentOffset;
      const end = Math.min(trace.length, start + MAX_PATCH_BYTES[api]);
      const bytes = await trace.read(start, end);
      this.pacer.requested();
      const began = performance.now();
      const result = await this.request((signal) => client.patchTrace(job.id, job.token, start, bytes, signal));
      if (result === undefined) return 'failed';
      this.heed(result);
      switch (result.status) {
        case 202:
          if (start === 0) this.options.mark?.('first PATCH', began, { bytes: end });
          this.advance(end);
          mismatches = 0;
          break;
        case 401:
        case 403:
          this.refused(`the server refused the trace of job ${job.id} (HTTP ${result.status})`);
          return 'ok';
        case 404:
          if (api === 'v4') {
            this.refused(`the server no longer has job ${job.id} (HTTP 404 on its trace)`);
            return 'ok';
          }
          logger.info('the server has no PATCH trace route for this job; sending full traces instead');
          this.mode = 'full';
          return this.sendFull();
        case 416: {
          const serverLength = result.serverLength;
          if (serverLength === undefined || ++mismatches > MAX_MISMATCHES) return 'failed';
          logger.debug({ from: start, serverLength }, 'trace range mismatch; resuming at the server length');
          if (serverLength > trace.length) {
            if (api === 'v1') return this.sendFull();
            logger.warn({ serverLength, length: trace.length }, 'the server has more trace than the runner wrote; retrying');
            return 'failed';
          }
          this.advance(serverLength);
          break;
        }
        default:
          logger.debug({ status: result.status, err: result.error }, 'trace PATCH failed; will retry');
          return 'failed';
      }
    } while (wholeParts ? this.partWaiting() : this.sentOffset < target);
    return 'ok';
  }

  /** v4's keep-alive (docs/protocol-v4.md §8.5): `running` with the checksum and size of what the server has. */
  private async keepAlive(): Promise<TickResult> {
    const { client, job } = this.options;
    const output = await this.checksum.of(this.sentOffset);
    this.pacer.requested();
    const result = await this.request((signal) => client.updateJob(job, { state: 'running', output }, signal));
    if (result === undefined) return 'failed';
    this.heed(result);
    if (result.outcome === 'ok') return 'ok';
    if (result.outcome === 'final') {
      this.refused(`the server no longer accepts updates for job ${job.id} (HTTP ${result.status})`);
      return 'ok';
    }
    return 'failed';
  }

  /** A full-trace PUT (v1 §7.5), or a state-only PUT as the keep-alive probe when nothing changed. */
  private async sendFull(): Promise<TickResult> {
    const { client, job, trace } = this.options;
    const length = trace.length;
    const changed = !this.fullTooLarge && (length !== this.sentOffset || this.mode === 'incremental');
    this.pacer.requested();
    const result = await this.request((signal) =>
      changed ? client.updateJobWithTrace(job, 'running', trace.text(length), signal) : client.updateJob(job, { state: 'running' }, signal),
    );
    if (result === undefined) return 'failed';
    if (result.outcome === 'ok') {
      if (changed) this.advance(length);
      return 'ok';
    }
    if (result.status === 413 && changed && this.mode === 'full') {
      this.options.logger.warn({ bytes: length }, 'the server refuses a full trace this large; only the state is sent until the job ends');
      this.fullTooLarge = true;
      return 'ok';
    }
    if (result.outcome === 'final') {
      const code = result.status === 404 ? 'JOB_CANCELED' : 'JOB_FORBIDDEN';
      this.abortJob(new JobAbortedError(code, `the server no longer accepts updates for job ${job.id} (HTTP ${result.status})`));
      this.halted = true;
      return 'ok';
    }
    return 'failed';
  }

  /** What an answer asks besides its status: a cancel, a new pace. */
  private heed(answer: { cancel?: CancelRequest; updateIntervalMs?: number }): void {
    if (answer.cancel) {
      const { api, job } = this.options;
      const how = answer.cancel === 'graceful' ? (api === 'v4' ? 'is canceling job' : 'reports as canceled job') : 'canceled job';
      this.abortJob(new JobAbortedError('JOB_CANCELED', `the server ${how} ${job.id}`, { graceful: answer.cancel === 'graceful' }));
    }
    if (answer.updateIntervalMs !== undefined) this.pacer.serverInterval(answer.updateIntervalMs);
  }

  /** The server refused the job's updates (403, or a v4 404): it must stop, and nothing more is sent live. */
  private refused(message: string): void {
    // v1's refusal lets after_script run, as before; v4's 403 means the job is no longer running there.
    this.abortJob(new JobAbortedError('JOB_FORBIDDEN', message, { graceful: this.options.api === 'v1' }));
    this.halted = true;
  }

  private advance(offset: number): void {
    // Progress (a 202, or a 416 that says the server has more) ends a failure streak.
    if (offset > this.sentOffset) this.pacer.progressed();
    this.sentOffset = offset;
    this.options.onAck?.(offset);
  }

  private abortJob(reason: JobAbortedError): void {
    this.options.onAbort?.(reason);
  }

  /** Runs one request under the outer signal and a per-request deadline; `undefined` = timed out. */
  private async request<T extends { retryAfterMs?: number }>(call: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
    const deadline = AbortSignal.timeout(this.options.requestTimeoutMs);
    this.retryAfterMs = undefined;
    try {
      const result = await call(AbortSignal.any([this.options.signal, deadline]));
      this.retryAfterMs = result.retryAfterMs;
      return result;
    } catch (error) {
      if (!this.options.signal.aborted && deadline.aborted) return undefined;
      throw error;
    }
  }
}
