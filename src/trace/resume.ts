/**
 * Finishing a delivery after a restart: reads a job state directory's delivery record and spool and
 * sends the final update that is still owed (crash recovery uses this). A job that never finished
 * gets lines at the end of its trace saying the runner stopped while it ran and when it was recovered.
 */
import { join } from 'node:path';
import type { RunnerApi } from '../client/api.js';
import { silentLogger, type Logger } from '../log/index.js';
import { sendFinalUpdate } from './final.js';
import { interruptedNotice } from './interrupted.js';
import { SpoolReader } from './spool.js';
import { DeliveryStateStore, isPending, readDeliveryState, SPOOL_FILE, STATE_FILE } from './state.js';
import { SentTrace } from './view.js';

export interface ResumeDeliveryOptions {
  /** The job the state dir belongs to (its name says, `build-<id>`): a record of another is refused. */
  buildId?: number;
  /** Default 1 h. */
  deadlineMs?: number;
  /** Deadline of each attempt. Default 60 s. */
  requestTimeoutMs?: number;
  /** State to report for a job that never finished (the runner died mid-job). Absent: such a job is
   *  left alone and `undefined` is returned. */
  unfinishedState?: 'success' | 'failed';
  /** For a job that never finished: what else recovery did, said in its trace's last line. */
  unfinishedDetail?: string;
  /** The clock, for the recovery time in that line. Default `() => new Date()`. */
  now?: () => Date;
  logger?: Logger;
}

/**
 * Sends the final update recorded as pending in `stateDir` (state + the whole trace from the spool).
 * Resolves `undefined` when nothing is owed (no record, already delivered or refused), else the
 * outcome, which is also written back to the record. Never rejects for server or network failures.
 */
export async function resumeDelivery(
  stateDir: string,
  client: RunnerApi,
  runnerToken: string,
  signal: AbortSignal,
  options: ResumeDeliveryOptions = {},
): Promise<{ delivered: boolean; status: number; refused?: true } | undefined> {
  const record = await readDeliveryState(stateDir);
  if (record === undefined) return undefined;
  if (options.buildId !== undefined && record.buildId !== options.buildId) {
    throw new Error(`${join(stateDir, STATE_FILE)} is the record of job ${record.buildId}, not ${options.buildId}; it was not written there by the runner`);
  }
  const state = record.finalState ?? options.unfinishedState;
  if (state === undefined || (record.finalState !== undefined && !isPending(record))) return undefined;
  const logger = (options.logger ?? silentLogger()).child({ component: 'trace', jobId: record.buildId });

  // Never through a link: the spool is read back as root and sent to the server.
  const { reader, size, mtime } = await SpoolReader.open(join(stateDir, SPOOL_FILE));
  const trace = new SentTrace({ length: size }, reader);
  const cut = record.limitCut !== undefined && record.limitNotice !== undefined ? Math.min(record.limitCut, size) : undefined;
  const store = new DeliveryStateStore(stateDir, { ...record, finalState: state });
  try {
    const endNotice = record.finalState === undefined ? await recordInterruption(store, reader, size, mtime, cut, options, logger) : record.endNotice;
    if (cut !== undefined || endNotice !== undefined) trace.setCut(cut ?? size, `${cut !== undefined ? record.limitNotice : ''}${endNotice ?? ''}`);
    const v4 = record.api === 'v4';
    const result = await sendFinalUpdate({
      client,
      api: v4 ? 'v4' : 'v1',
      // v1 authenticates the update with the runner token; v4 with the job token it recorded.
      job: { id: record.buildId, token: record.jobToken ?? '', runnerToken },
      state,
      ...(v4 && state === 'failed' ? { failure: record.failure ?? (record.finalState === undefined ? { reason: 'runner_system_failure' as const } : {}) } : {}),
      ...(record.acceptedReasons ? { acceptedReasons: record.acceptedReasons } : {}),
      acknowledged: record.sentOffset,
      trace,
      deadlineMs: options.deadlineMs ?? 3_600_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
      signal,
      logger,
    });
    await store.update({ delivered: result.delivered, refused: result.refused, finalStatus: result.status });
    return { delivered: result.delivered, status: result.status, ...(result.refused ? { refused: true as const } : {}) };
  } finally {
    await reader.close();
  }
}

/** The lines that explain a job that never finished, recorded before sending so a later attempt (after
 *  another restart) sends this same trace. */
async function recordInterruption(
  store: DeliveryStateStore,
  reader: SpoolReader,
  size: number,
  mtime: Date,
  cut: number | undefined,
  options: ResumeDeliveryOptions,
  logger: Logger,
): Promise<string> {
  // The limit notice ends in a newline; the job's own output may not.
  const midLine = cut === undefined && size > 0 && (await reader.read(size - 1, size))[0] !== 0x0a;
  const endNotice = interruptedNotice(
    {
      ...(size > 0 ? { lastOutputAt: mtime } : {}),
      recoveredAt: options.now?.() ?? new Date(),
      ...(options.unfinishedDetail ? { detail: options.unfinishedDetail } : {}),
    },
    midLine,
  );
  await store.update({ endNotice }).catch((error: unknown) => logger.warn({ err: error }, 'cannot write the trace delivery record'));
  return endNotice;
}
