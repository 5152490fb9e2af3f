/**
 * Finishing a delivery after a restart: reads a job state directory's delivery record and spool and
 * sends the final update that is still owed (crash recovery uses this).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunnerApiClient } from '../client/runner-api.js';
import { silentLogger, type Logger } from '../log.js';
import { sendFinalUpdate } from './final.js';
import { SpoolReader } from './spool.js';
import { DeliveryStateStore, isPending, readDeliveryState, SPOOL_FILE } from './state.js';
import { SentTrace } from './view.js';

export interface ResumeDeliveryOptions {
  /** Default 1 h. */
  deadlineMs?: number;
  /** Deadline of each attempt. Default 60 s. */
  requestTimeoutMs?: number;
  /** State to report for a job that never finished (the runner died mid-job). Absent: such a job is
   *  left alone and `undefined` is returned. */
  unfinishedState?: 'success' | 'failed';
  logger?: Logger;
}

/**
 * Sends the final update recorded as pending in `stateDir` (state + the whole trace from the spool).
 * Resolves `undefined` when nothing is owed (no record, already delivered or refused), else the
 * outcome, which is also written back to the record. Never rejects for server or network failures.
 */
export async function resumeDelivery(
  stateDir: string,
  client: RunnerApiClient,
  runnerToken: string,
  signal: AbortSignal,
  options: ResumeDeliveryOptions = {},
): Promise<{ delivered: boolean; status: number } | undefined> {
  const record = await readDeliveryState(stateDir);
  if (record === undefined) return undefined;
  const state = record.finalState ?? options.unfinishedState;
  if (state === undefined || (record.finalState !== undefined && !isPending(record))) return undefined;
  const logger = (options.logger ?? silentLogger()).child({ component: 'trace', jobId: record.buildId });

  const spoolPath = join(stateDir, SPOOL_FILE);
  const { size } = await stat(spoolPath);
  const reader = await SpoolReader.open(spoolPath);
  const trace = new SentTrace({ length: size }, reader);
  if (record.limitCut !== undefined && record.limitNotice !== undefined) {
    trace.setCut(Math.min(record.limitCut, size), record.limitNotice);
  }
  const store = new DeliveryStateStore(stateDir, { ...record, finalState: state });
  try {
    const result = await sendFinalUpdate({
      client,
      buildId: record.buildId,
      runnerToken,
      state,
      trace,
      deadlineMs: options.deadlineMs ?? 3_600_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
      signal,
      logger,
    });
    await store.update({ delivered: result.delivered, refused: result.refused, finalStatus: result.status });
    return { delivered: result.delivered, status: result.status };
  } finally {
    await reader.close();
  }
}
