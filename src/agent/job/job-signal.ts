/**
 * The signal a job's stages run under: the server's cancel (trace), the job timeout and the daemon's
 * stop, combined; whichever fires first names the reason the job stopped.
 */
import { setLongTimeout } from '../../util/timers.js';

/** Job timeout when the payload has none (≤ 0), as in GitLab Runner (§10.5). */
export const DEFAULT_JOB_TIMEOUT_S = 7200;

/** Why a job stopped early; the message is the trace's `ERROR: Job failed: <message>`. */
export class JobStop extends Error {}

/**
 * The daemon aborts its running jobs because it was told to stop at once (SIGTERM/SIGINT): the job
 * fails with `runner_interrupted`, as in GitLab Runner (the runner is not broken, the job not at fault).
 */
export class JobInterrupted extends JobStop {}

export interface JobSignal {
  signal: AbortSignal;
  /** The job timeout alone (after_script runs after a cancel, not after this). */
  timeout: AbortSignal;
  /** What is left of the job's timeout, ms. */
  leftMs(): number;
  /** `canceled`, the timeout's message or the daemon's stop reason. */
  reason(): string;
  /** Throws a {@link JobStop} once the job signal fired. */
  check(): void;
  /** The job timeout fired (before a cancel or stop). */
  timedOut(): boolean;
  /** The server canceled the job (before a timeout or stop). */
  canceled(): boolean;
  /** The daemon aborted the job on a stop signal (before a cancel or timeout): a {@link JobInterrupted}. */
  interrupted(): boolean;
  /** Clears the timer and the listener. */
  dispose(): void;
}

/** Starts the job timeout; `onStop` runs once when any of the three fires. */
export function jobSignal(timeoutSeconds: number, cancel: AbortSignal, stop: AbortSignal, onStop: (reason: string, canceled: boolean) => void): JobSignal {
  const timeoutS = timeoutSeconds > 0 ? timeoutSeconds : DEFAULT_JOB_TIMEOUT_S;
  const timeout = new AbortController();
  const deadline = Date.now() + timeoutS * 1000;
  // A long timer: a timeout past ~24.8 days must not fire at once (Node's own timers would).
  const timer = setLongTimeout(() => timeout.abort(new JobStop(`execution took longer than ${timeoutS} seconds`)), timeoutS * 1000, { unref: true });
  const signal = AbortSignal.any([cancel, timeout.signal, stop]);
  const reason = (): string => {
    if (cancel.aborted) return 'canceled';
    const why: unknown = timeout.signal.aborted ? timeout.signal.reason : stop.reason;
    return why instanceof Error ? why.message : 'canceled';
  };
  const listener = (): void => onStop(reason(), cancel.aborted);
  signal.addEventListener('abort', listener, { once: true });
  return {
    signal,
    timeout: timeout.signal,
    leftMs: () => Math.max(0, deadline - Date.now()),
    reason,
    check() {
      if (signal.aborted) throw new JobStop(reason());
    },
    timedOut: () => !cancel.aborted && timeout.signal.aborted,
    canceled: () => cancel.aborted,
    interrupted: () => !cancel.aborted && !timeout.signal.aborted && stop.reason instanceof JobInterrupted,
    dispose() {
      timer.clear();
      signal.removeEventListener('abort', listener);
    },
  };
}
