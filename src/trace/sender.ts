/**
 * The live trace sender (docs/protocol-v1.md §7.2–§7.5): a cursor over the sent trace, never a copy of it.
 *
 * New output goes out as soon as it appears when the sender was idle, then in batches every
 * `updateIntervalMs`, as PATCHes of at most 1 MiB (looping until caught up). When nothing is new, an
 * empty PATCH every `keepaliveIntervalMs` is the cancellation probe (§7.4). 202 moves the cursor to
 * the end it sent; 416 moves it to the server's length (§7.3: a 416 is a lost ack, not an error);
 * 404 switches to full-trace PUTs for the rest of the job (§7.5); failures retry from the same offset
 * with backoff. Nothing is skipped or sent twice: the cursor only moves on what the server says it has.
 */
import { Backoff, retry, type RetryPolicy, type Step } from '../client/retry.js';
import type { RunnerApiClient } from '../client/runner-api.js';
import type { Logger } from '../log/index.js';
import { JobAbortedError } from './errors.js';
import type { SentTrace } from './view.js';

/** Largest PATCH body: a runner far behind catches up in several requests, none of them large to retry. */
export const MAX_PATCH_BYTES = 1024 * 1024;
/** Consecutive 416s within one tick before it counts as a failure (then backoff, fresh round-trip). */
const MAX_MISMATCHES = 2;
const RETRY_POLICY: RetryPolicy = { baseMs: 500, maxMs: 10_000 };
/** Failed PATCH rounds `drain` tolerates before giving up on the tail. */
const DRAIN_ATTEMPTS = 8;

export interface SenderOptions {
  client: RunnerApiClient;
  buildId: number;
  buildToken: string;
  runnerToken: string;
  trace: SentTrace;
  updateIntervalMs: number;
  keepaliveIntervalMs: number;
  /** Deadline of each request. */
  requestTimeoutMs: number;
  /** Stops the sender and aborts its in-flight request (daemon shutdown). */
  signal: AbortSignal;
  logger: Logger;
  /** The server canceled or failed the job, or refused it (403): the job must stop. */
  onAbort(reason: JobAbortedError): void;
  /** The server has the sent trace up to `offset`. */
  onAck(offset: number): void;
}

type TickResult = 'ok' | 'failed';

export class TraceSender {
  private sentOffset = 0;
  private mode: 'incremental' | 'full' = 'incremental';
  private runningSent = false;
  /** Refused by the server: nothing more is sent live (the final update still goes out). */
  private halted = false;
  /** The server refused a full trace as too large (413): full mode only probes with state PUTs. */
  private fullTooLarge = false;
  private lastRequestAt: number;
  /** Failed ticks in a row; progress resets it. */
  private readonly backoff = new Backoff(RETRY_POLICY);
  /** The server's `Retry-After` on the last answer, in ms. */
  private retryAfterMs: number | undefined;
  private retryAt = 0;
  private stopping = false;
  private waitingForData = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: SenderOptions) {
    // As if the last request were one interval ago: the first output goes out at once.
    this.lastRequestAt = Date.now() - options.updateIntervalMs;
  }

  /** Bytes the server acknowledged. */
  get acknowledged(): number {
    return this.sentOffset;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Tells an idle sender that output arrived. Cheap enough to call on every write. */
  notify(): void {
    if (this.waitingForData) this.wake?.();
  }

  /** Stops the loop after its in-flight request (if any) completes. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
  }

  /**
   * After `stop()`: delivers what the server does not have yet by PATCH, until it has all of it, the
   * deadline passes or the server keeps failing. For a final update whose whole trace the server
   * refuses as too large (413): the state then goes alone, and the tail must not be lost.
   * Returns whether the server has the whole trace.
   */
  async drain(deadline: AbortSignal): Promise<boolean> {
    const pending = (): boolean =>
      this.mode === 'incremental' && !this.halted && this.sentOffset < this.options.trace.length && !deadline.aborted && !this.options.signal.aborted;
    const step = async (): Promise<Step<undefined, undefined>> => {
      while (pending()) {
        const result: TickResult = await this.tick().catch(() => 'failed' as const);
        if (result === 'failed') return { failed: undefined, retryAfterMs: this.retryAfterMs };
      }
      return { done: undefined };
    };
    await retry(step, { policy: { ...RETRY_POLICY, attempts: DRAIN_ATTEMPTS + 1 }, signal: deadline }).catch(() => undefined);
    return this.sentOffset >= this.options.trace.length;
  }

  private async run(): Promise<void> {
    const { signal, logger } = this.options;
    while (!this.stopping && !signal.aborted) {
      await this.waitForWork();
      if (this.stopping || signal.aborted || this.halted) continue;
      let result: TickResult;
      try {
        result = await this.tick();
      } catch (error) {
        if (signal.aborted) break;
        logger.warn({ err: error }, 'trace update failed; retrying');
        result = 'failed';
      }
      if (result === 'ok') {
        this.backoff.succeeded();
        this.retryAt = 0;
      } else {
        this.retryAt = Date.now() + this.backoff.failed(this.retryAfterMs);
      }
    }
  }

  private hasNews(): boolean {
    if (this.mode === 'full' && this.fullTooLarge) return false;
    const length = this.options.trace.length;
    return this.mode === 'full' ? length !== this.sentOffset : length > this.sentOffset;
  }

  private async waitForWork(): Promise<void> {
    const { signal, keepaliveIntervalMs, updateIntervalMs } = this.options;
    for (;;) {
      if (this.stopping || signal.aborted) return;
      const now = Date.now();
      const news = this.hasNews();
      let due = this.halted ? Number.POSITIVE_INFINITY : this.lastRequestAt + keepaliveIntervalMs;
      if (news && !this.halted) due = Math.min(due, this.lastRequestAt + updateIntervalMs);
      due = Math.max(due, this.retryAt);
      if (due <= now) return;
      this.waitingForData = !news;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        const timer = Number.isFinite(due) ? setTimeout(done, due - now) : undefined;
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      this.waitingForData = false;
    }
  }

  private async tick(): Promise<TickResult> {
    const { client, buildId, buildToken, runnerToken, trace, logger } = this.options;
    if (this.mode === 'full') return this.sendFull();
    if (!this.runningSent) {
      // §6.2: `running` once, before the first PATCH; its answer is ignored (§12 item 14).
      const result = await this.request((signal) => client.updateBuild(buildId, runnerToken, { state: 'running' }, signal));
      this.runningSent = true;
      if (result?.status !== 200) logger.debug({ status: result?.status ?? -1 }, 'state update "running" not accepted');
    }
    const target = trace.length;
    let mismatches = 0;
    do {
      const start = this.sentOffset;
      const end = Math.min(trace.length, start + MAX_PATCH_BYTES);
      const bytes = await trace.read(start, end);
      this.lastRequestAt = Date.now();
      const result = await this.request((signal) => client.patchTrace(buildId, buildToken, start, bytes, signal));
      if (result === undefined) return 'failed';
      if (result.buildStatus === 'canceled' || result.buildStatus === 'failed') {
        this.abortJob('JOB_CANCELED', `the server reports job ${buildId} as ${result.buildStatus}`);
      }
      switch (result.status) {
        case 202:
          this.advance(end);
          mismatches = 0;
          break;
        case 401:
        case 403:
          this.abortJob('JOB_FORBIDDEN', `the server refused the trace of job ${buildId} (HTTP ${result.status})`);
          this.halted = true;
          return 'ok';
        case 404:
          logger.info('the server has no PATCH trace route for this job; sending full traces instead');
          this.mode = 'full';
          return this.sendFull();
        case 416: {
          const serverLength = result.serverLength;
          if (serverLength === undefined || ++mismatches > MAX_MISMATCHES) return 'failed';
          logger.debug({ from: start, serverLength }, 'trace range mismatch; resuming at the server length');
          if (serverLength > trace.length) return this.sendFull();
          this.advance(serverLength);
          break;
        }
        default:
          logger.debug({ status: result.status, err: result.error }, 'trace PATCH failed; will retry');
          return 'failed';
      }
    } while (this.sentOffset < target);
    return 'ok';
  }

  /** A full-trace PUT (§7.5), or a state-only PUT as the keep-alive probe when nothing changed. */
  private async sendFull(): Promise<TickResult> {
    const { client, buildId, runnerToken, trace } = this.options;
    const length = trace.length;
    const changed = !this.fullTooLarge && (length !== this.sentOffset || this.mode === 'incremental');
    this.lastRequestAt = Date.now();
    const result = await this.request((signal) =>
      changed
        ? client.updateBuildWithTrace(buildId, runnerToken, 'running', trace.text(length), signal)
        : client.updateBuild(buildId, runnerToken, { state: 'running' }, signal),
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
      this.abortJob(code, `the server no longer accepts updates for job ${buildId} (HTTP ${result.status})`);
      this.halted = true;
      return 'ok';
    }
    return 'failed';
  }

  private advance(offset: number): void {
    // Progress (a 202, or a 416 that says the server has more) ends a failure streak.
    if (offset > this.sentOffset) this.backoff.succeeded();
    this.sentOffset = offset;
    this.options.onAck(offset);
  }

  private abortJob(code: 'JOB_CANCELED' | 'JOB_FORBIDDEN', message: string): void {
    this.options.onAbort(new JobAbortedError(code, message));
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
