/**
 * How `run` and `run-once` stop, as GitLab Runner 19 does (commands/multi.go, single.go):
 *
 * - SIGQUIT is graceful: no new jobs; running ones finish, however long they take. Another SIGQUIT
 *   changes nothing; a SIGTERM or SIGINT then turns it forceful.
 * - SIGTERM and SIGINT are forceful: running jobs are aborted at once and reported failed
 *   (`runner_interrupted`). The process waits `shutdown_timeout` for that to end (final updates sent,
 *   executors cleaned up); past it, or at any further stop signal, it gives up waiting and exits 1.
 *   A final update not delivered by then is sent by the next start (agent/recover.ts).
 */
import type { Logger } from '../log/index.js';

export interface StopActions {
  /** SIGQUIT: take no new jobs, let running ones finish. */
  graceful(signal: NodeJS.Signals): void;
  /** SIGTERM/SIGINT: abort running jobs now. */
  forceful(signal: NodeJS.Signals): void;
}

export interface StopSignals {
  /** Aborted at the first stop signal, whichever it was. */
  readonly first: AbortSignal;
  /** The first stop signal received. */
  readonly received: NodeJS.Signals | undefined;
  /**
   * Settles, with why, when the process must end without waiting any longer: a forceful stop ran
   * past shutdown_timeout, or another stop signal came during one. Never settles otherwise.
   */
  readonly forcedExit: Promise<string>;
  dispose(): void;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGQUIT'];

/** Installs the handlers; `shutdownTimeoutMs` is read when a forceful stop starts (a reload may change it). */
export function handleStopSignals(logger: Logger, actions: StopActions, shutdownTimeoutMs: () => number): StopSignals {
  const first = new AbortController();
  let received: NodeJS.Signals | undefined;
  let forceful = false;
  let timer: NodeJS.Timeout | undefined;
  let giveUp: (why: string) => void = () => undefined;
  const forcedExit = new Promise<string>((resolve) => {
    giveUp = resolve;
  });
  const handler = (signal: NodeJS.Signals): void => {
    received ??= signal;
    first.abort();
    if (forceful) {
      logger.warn({ stop_signal: signal }, 'forced exit: a stop signal during the forceful shutdown');
      giveUp(`forced exit with stop signal ${signal}`);
      return;
    }
    if (signal === 'SIGQUIT') {
      actions.graceful(signal);
      return;
    }
    forceful = true;
    const ms = shutdownTimeoutMs();
    timer = setTimeout(() => giveUp(`shutdown timed out after ${ms / 1000} s (shutdown_timeout)`), ms);
    actions.forceful(signal);
  };
  for (const s of SIGNALS) process.on(s, handler);
  return {
    first: first.signal,
    get received() {
      return received;
    },
    forcedExit,
    dispose: () => {
      clearTimeout(timer);
      for (const s of SIGNALS) process.off(s, handler);
    },
  };
}
