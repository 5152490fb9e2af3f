/**
 * The delivery record in a job's state directory (`trace-state.json`): how much of the trace the
 * server acknowledged, and whether the final update is still owed, so a restarted runner can finish
 * the delivery (`resumeDelivery`). Written atomically (temp file + rename), mode 0600 in the job's
 * private state dir: for a v4 job it holds the job token, which v4's final update needs (and which
 * stops working once the job is finished).
 */
import { rename } from 'node:fs/promises';
import { openRegularFile } from '../util/existing-file.js';
import { join } from 'node:path';
import { writeNewFile } from '../util/new-file.js';
import type { RunnerBuildState } from '../protocol/types.js';
import type { JobFailure } from './final.js';

export const STATE_FILE = 'trace-state.json';
export const SPOOL_FILE = 'trace.log';

export interface DeliveryState {
  version: 1;
  buildId: number;
  /** Bytes of the sent trace the server acknowledged. */
  sentOffset: number;
  /** Set once the log exceeded the output limit: where the sent trace ends in the spool… */
  limitCut?: number;
  /** …and the notice that follows it. */
  limitNotice?: string;
  /** Lines that end the sent trace after the spool (and the limit notice): why a job that never
   *  finished is reported failed. Recorded once, so every later attempt sends the same trace. */
  endNotice?: string;
  /** The job's result, once it ended: the final update owes this state. */
  finalState?: Exclude<RunnerBuildState, 'running'>;
  /** The server answered the final update with 200. */
  delivered: boolean;
  /** The server refused the final update for good (403/404): nothing is owed any more. */
  refused?: boolean;
  /** Status of the last final-update attempt (-1 = transport error). */
  finalStatus?: number;
  /** The API the job came by; absent: v1. */
  api?: 'v4';
  /** v4: the job token the final update authenticates with. */
  jobToken?: string;
  /** v4: why the job failed, for the final update. */
  failure?: JobFailure;
  /** v4: the failure reasons the server accepts. */
  acceptedReasons?: string[];
}

/** True when a final update is recorded but neither delivered nor refused. */
export function isPending(state: DeliveryState): boolean {
  return state.finalState !== undefined && !state.delivered && state.refused !== true;
}

export async function readDeliveryState(stateDir: string): Promise<DeliveryState | undefined> {
  let text: string;
  try {
    // Never through a link: a restarted daemon reads it as root, and sends what it names.
    const handle = await openRegularFile(join(stateDir, STATE_FILE));
    try {
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<DeliveryState>;
  if (parsed.version !== 1 || typeof parsed.buildId !== 'number' || typeof parsed.sentOffset !== 'number') {
    throw new Error(`${join(stateDir, STATE_FILE)} is not a trace delivery record`);
  }
  return parsed as DeliveryState;
}

/** The longest a `note` waits for a write of its own (when no `update` writes it sooner). */
export const NOTE_WRITE_MS = 1000;

/** Keeps the record in memory and writes it in order; concurrent updates coalesce. */
export class DeliveryStateStore {
  private state: DeliveryState;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private noted: NodeJS.Timeout | undefined;

  constructor(
    private readonly stateDir: string,
    initial: DeliveryState,
  ) {
    this.state = { ...initial };
  }

  get current(): Readonly<DeliveryState> {
    return this.state;
  }

  /** Applies `patch` and schedules a write; resolves when a write containing it is on disk. */
  update(patch: Partial<DeliveryState>): Promise<void> {
    this.state = { ...this.state, ...patch };
    this.dirty = true;
    clearTimeout(this.noted);
    this.noted = undefined;
    return this.write();
  }

  /**
   * Applies `patch` for a later write: the next `update`'s, or one of its own within NOTE_WRITE_MS.
   * For what a restart can do without: how much of the trace the server acknowledged (a burst's
   * PATCHes would otherwise each cost a write). A record that lags only resends what the server has,
   * and the server answers that with where its trace ends (416). A failed write of its own is left to
   * the next one.
   */
  note(patch: Partial<DeliveryState>): void {
    this.state = { ...this.state, ...patch };
    this.dirty = true;
    this.noted ??= setTimeout(() => {
      this.noted = undefined;
      this.write().catch(() => undefined);
    }, NOTE_WRITE_MS).unref();
  }

  /** A write after those already queued; resolves when it is on disk. */
  private write(): Promise<void> {
    this.writing = this.writing.catch(() => undefined).then(() => this.flushIfDirty());
    return this.writing;
  }

  private async flushIfDirty(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    const path = join(this.stateDir, STATE_FILE);
    const temporary = `${path}.${process.pid}.tmp`;
    await writeNewFile(temporary, `${JSON.stringify(this.state)}\n`, 0o600);
    await rename(temporary, path);
  }
}
