/**
 * The trace streamer (docs/protocol-v1.md §7): every byte of a job's log, in order, exactly once,
 * live. Output is sanitised, masked and appended to a spool file in the job's state directory (the
 * truth); a sender streams it to the server as a cursor over that file; `finish` sends the final
 * state with the whole trace and records the delivery so a restarted runner can complete it.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { RunnerApi } from '../client/api.js';
import { silentLogger, type Logger } from '../log/index.js';
import type { BuildPayload } from '../protocol/types.js';
import { TraceCapture, type TraceStream } from './capture.js';
import { PrefixChecksum } from './checksum.js';
import { sendFinalUpdate, type JobFailure } from './final.js';
import { limitNotice } from './limit.js';
import { collectSecrets } from './secrets.js';
import { tokenPrefixes } from './token-prefixes.js';
import { TraceSender } from './sender.js';
import { SpoolReader, SpoolWriter } from './spool.js';
import { DeliveryStateStore, SPOOL_FILE } from './state.js';
import { SentTrace } from './view.js';
import type { MarkStep } from '../util/timeline.js';
import type { JobAbortedError } from './errors.js';

export { JobAbortedError, type JobAbortCode } from './errors.js';
export { MASK } from './mask.js';
export { collectSecrets, MIN_SECRET_LENGTH } from './secrets.js';
export { readDeliveryState, isPending, STATE_FILE, SPOOL_FILE, type DeliveryState } from './state.js';
export { resumeDelivery, type ResumeDeliveryOptions } from './resume.js';
export type { JobFailure } from './final.js';
export { JOB_STREAM, RUNNER_STREAM, type TraceStream } from './capture.js';
export { gitlabSectionName } from './section-watch.js';

export interface StartTraceOptions {
  build: BuildPayload;
  /** The client the job came by (its `api` is known). */
  client: RunnerApi;
  runnerToken: string;
  /** The job's state directory (spool + delivery state live here). Created when missing. */
  stateDir: string;
  /** Default 4096. */
  outputLimitKiB?: number;
  /** Default 1000. */
  updateIntervalMs?: number;
  /** Default 5000. */
  keepaliveIntervalMs?: number;
  /** Default 1 h. */
  finalUpdateDeadlineMs?: number;
  /** Failed attempts of the final update before giving up (`job_status_final_update_retry_limit`); default: the deadline alone. */
  finalUpdateRetryLimit?: number;
  /** Extra values to mask; the build token, runner token, non-public variables and URL credentials
   *  are always masked. */
  secrets?: string[];
  /**
   * Daemon shutdown: aborting stops live sending at once. Pass the daemon's stop signal, not the
   * job's cancel/timeout signal — after it aborts, `finish` tries the final update for at most 10 s
   * and leaves the rest to `resumeDelivery` (the delivery record stays pending).
   */
  signal: AbortSignal;
  logger?: Logger;
  /** Deadline of each trace request. Default 30 s. */
  requestTimeoutMs?: number;
  /** The job's timeline (`--debug`): the first PATCH is a step of it. */
  mark?: MarkStep;
  /** Stamp every line as GitLab Runner's FF_TIMESTAMPS does (stamp.ts). Default off. */
  timestamps?: boolean;
  /** The server folds log sections: follow the ones each stream opens (section-watch.ts). */
  sections?: boolean;
  /** FF_MASK_ALL_DEFAULT_TOKENS as the runner resolved it (token-prefixes.ts); absent: the job's variable says. */
  maskAllDefaultTokens?: boolean;
}

export interface JobTrace {
  /** Append runner output (the runner's stream, 00). Never waits on the network. */
  write(chunk: string | Uint8Array): void;
  /** A stream of its own for a stage's output (01 by default; capture.ts); end it when the stage ends. */
  openStream(id?: number): TraceStream;
  /** A Writable over the same trace, for piping a process's stdout/stderr. Each read of this
   *  property returns a new Writable, so stdout and stderr can each be piped (and ended) separately;
   *  ending one does not end the trace. */
  readonly stream: Writable;
  /** Aborts when the server cancels/fails the job (v1 Build-Status canceled/failed, v4 Job-Status
   *  canceling/canceled/failed, or 403); the reason is a {@link JobAbortedError} with code
   *  `JOB_CANCELED` or `JOB_FORBIDDEN`, `graceful` when after_script may still run. */
  readonly cancelSignal: AbortSignal;
  /** Aborts when the server asks to stop at once (v4 `canceled`/`failed`, a v4 403): after_script
   *  does not run, or is stopped. Also after a graceful cancel that the server later makes hard. */
  readonly stopNowSignal: AbortSignal;
  /** Path of the full (masked) log on disk: everything the job printed, also past the output limit.
   *  It lives in `stateDir`; the notice in a truncated trace names it, so keep it when `truncated`. */
  readonly logPath: string;
  /** Warnings about what the trace's masking leaves out (made-up URL passwords, token prefixes), for the job log. */
  readonly notes: readonly string[];
  /** True once the output limit cut the sent trace: the file at `logPath` is the only full copy. */
  readonly truncated: boolean;
  /** Ends the trace, sends the final update with the state (and, v4, why it failed); resolves when
   *  the server has it (200), or it was refused (403/404), or the deadline passed. Never rejects;
   *  idempotent. `refused` is set (true) only when the server refused it for good. */
  finish(state: 'success' | 'failed', failure?: JobFailure): Promise<{ delivered: boolean; status: number; refused?: true }>;
  /** After `finish`: resolves once the delivery record holds the final update's outcome and the
   *  trace's files are closed. The state dir may go then, not before. Never rejects. */
  settled(): Promise<void>;
}

/** Longest final-update attempt once the daemon is shutting down. */
const SHUTDOWN_FINAL_DEADLINE_MS = 10_000;
/** How long the tail of a trace too large for one final PUT may take to go out by PATCH. */
const DRAIN_DEADLINE_MS = 10 * 60_000;
/** v1: how long the job's end tries to PATCH the tail before its final update carries the whole trace instead. */
const V1_TAIL_DEADLINE_MS = 60_000;
/** v1: the longest trace the final update carries rather than PATCHing its tail first. */
const V1_WHOLE_TRACE_MAX_BYTES = 1024 * 1024;

/** Starts capturing and streaming one job's trace. */
export async function startTrace(options: StartTraceOptions): Promise<JobTrace> {
  const { build, client, runnerToken, stateDir, signal } = options;
  const logger = (options.logger ?? silentLogger()).child({ component: 'trace', jobId: build.id });
  const limitBytes = (options.outputLimitKiB ?? 4096) * 1024;
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  await mkdir(stateDir, { recursive: true });
  const logPath = join(stateDir, SPOOL_FILE);
  const spool = SpoolWriter.create(logPath);
  const { reader } = await SpoolReader.open(logPath);
  const trace = new SentTrace(spool, reader);
  const api = client.api;
  const job = { id: build.id, token: build.token, runnerToken };
  // v4 finishes a job with its job token: a restarted runner needs it to deliver what is owed.
  const store = new DeliveryStateStore(stateDir, {
    version: 1,
    buildId: build.id,
    sentOffset: 0,
    delivered: false,
    ...(api === 'v4' ? { api, jobToken: build.token, ...(build.failure_reasons ? { acceptedReasons: build.failure_reasons } : {}) } : {}),
  });
  const record = (patch: Parameters<DeliveryStateStore['update']>[0]): Promise<void> =>
    store.update(patch).catch((error: unknown) => logger.warn({ err: error }, 'cannot write the trace delivery record'));
  await record({});

  const cancel = new AbortController();
  const stopNow = new AbortController();
  const sender = new TraceSender({
    client,
    api,
    job,
    trace,
    updateIntervalMs: options.updateIntervalMs ?? 1000,
    keepaliveIntervalMs: options.keepaliveIntervalMs ?? 5000,
    requestTimeoutMs,
    signal,
    logger,
    ...(options.mark ? { mark: options.mark } : {}),
    onAbort: (reason: JobAbortedError) => {
      if (cancel.signal.aborted && (reason.graceful || stopNow.signal.aborted)) return;
      logger.warn({ code: reason.code, graceful: reason.graceful }, reason.message);
      if (!cancel.signal.aborted) cancel.abort(reason);
      if (!reason.graceful) stopNow.abort(reason);
    },
    onAck: (offset) => store.note({ sentOffset: offset }),
  });
  // v4's final update states the whole trace's CRC: summed as the bytes are written, up to the cut.
  const written = api === 'v4' ? new PrefixChecksum(trace) : undefined;
  const notes: string[] = [];
  const tokens = tokenPrefixes(build, options.maskAllDefaultTokens);
  if (tokens.leftOut.length > 0) notes.push(`WARNING: token prefixes not masked (the 15 shortest are, none longer than 256 characters, as GitLab Runner does): ${shortList(tokens.leftOut)}`);
  const capture = new TraceCapture({
    secrets: collectSecrets(build, runnerToken, options.secrets, notes),
    tokenPrefixes: tokens.prefixes,
    limitBytes,
    spool: written
      ? {
          append: (bytes) => {
            const at = spool.length;
            spool.append(bytes);
            if (trace.cut === undefined) written.feed(bytes, at);
          },
        }
      : spool,
    logger,
    onCut: (cut) => {
      written?.forget(cut);
      const notice = limitNotice(limitBytes, logPath);
      trace.setCut(cut, notice);
      logger.warn({ limitBytes, logPath }, 'job log exceeded the output limit; the rest is kept on disk only');
      void record({ limitCut: cut, limitNotice: notice });
    },
    onData: () => sender.notify(),
    ...(options.timestamps ? { timestamps: true } : {}),
    ...(options.sections ? { sections: true } : {}),
  });
  sender.start();

  let finishing: Promise<{ delivered: boolean; status: number; refused?: true }> | undefined;
  let closing: Promise<void> = Promise.resolve();
  const finish = async (state: 'success' | 'failed', failure?: JobFailure): Promise<{ delivered: boolean; status: number; refused?: true }> => {
    capture.end();
    await sender.stop();
    // v1: the tail of a long trace goes by PATCH (one round: raw bytes, where the update would carry the
    // whole trace again, JSON-encoded), so the final update need not (it does when this fails); a short trace
    // goes whole in the update, one request.
    if (api === 'v1' && trace.length > V1_WHOLE_TRACE_MAX_BYTES && sender.acknowledged < trace.length) {
      await sender.drain(AbortSignal.any([signal, AbortSignal.timeout(V1_TAIL_DEADLINE_MS)]), 0);
    }
    // The record names the final state before the update goes (a restart then sends that state, not
    // "runner restarted"); written while v4's rest of the trace goes out by PATCH, which needs no record.
    const recorded = record({ sentOffset: sender.acknowledged, finalState: state, delivered: false, ...(failure ? { failure } : {}) });
    const shuttingDown = signal.aborted;
    const result = await sendFinalUpdate({
      client,
      api,
      job,
      state,
      ...(failure ? { failure } : {}),
      ...(build.failure_reasons ? { acceptedReasons: build.failure_reasons } : {}),
      trace,
      ...(written ? { checksum: written } : {}),
      acknowledged: sender.acknowledged,
      deadlineMs: shuttingDown
        ? Math.min(SHUTDOWN_FINAL_DEADLINE_MS, options.finalUpdateDeadlineMs ?? 3_600_000)
        : (options.finalUpdateDeadlineMs ?? 3_600_000),
      requestTimeoutMs: Math.max(requestTimeoutMs, 60_000),
      ...(options.finalUpdateRetryLimit !== undefined ? { failureLimit: options.finalUpdateRetryLimit } : {}),
      ...(shuttingDown ? {} : { signal }),
      logger,
      ready: recorded,
      beforeStateOnly: async () => {
        const whole = await sender.drain(AbortSignal.timeout(DRAIN_DEADLINE_MS));
        await record({ sentOffset: sender.acknowledged });
        if (!whole) logger.warn({ acknowledged: sender.acknowledged, length: trace.length }, 'could not deliver the rest of the trace by PATCH; the server keeps what it has');
      },
    });
    // The outcome's record and the files' closing follow the job's end rather than hold it up (`settled`).
    closing = record({ delivered: result.delivered, refused: result.refused, finalStatus: result.status })
      .then(async () => {
        spool.close();
        await reader.close();
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'cannot close the trace files'));
    return { delivered: result.delivered, status: result.status, ...(result.refused ? { refused: true as const } : {}) };
  };

  return {
    write: (chunk) => capture.write(chunk),
    openStream: (id) => capture.openStream(id),
    get stream() {
      return capture.stream();
    },
    cancelSignal: cancel.signal,
    stopNowSignal: stopNow.signal,
    logPath,
    notes,
    get truncated() {
      return trace.cut !== undefined;
    },
    finish: (state, failure) => (finishing ??= finish(state, failure)),
    settled: async () => {
      await finishing;
      await closing;
    },
  };
}

/** Texts the coordinator chose, printable in one short line: the first few, each cut short and quoted. */
export function shortList(texts: readonly string[]): string {
  const shown = texts.slice(0, 5).map((text) => JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text));
  return texts.length > shown.length ? `${shown.join(', ')} and ${texts.length - shown.length} more` : shown.join(', ');
}
