/**
 * The daemon's last lines against failures nothing listened for. Node's default is to end the
 * process, which in a runner means every running job dies mid-build, its trace stops and its slot's
 * next job may not start. Each such failure is a bug to be fixed where it arises (the artifacts
 * download's rejection on a full disk was one); these handlers only keep the daemon and its jobs alive
 * meanwhile and log the bug loudly enough to be reported.
 *
 * - A promise rejected with nothing handling it: logged, the process carries on.
 * - A connection's error with no `error` listener on its socket or request (a library that let go of
 *   a socket too early, e.g. `write ECANCELED` as a TLS socket is torn down): Node throws it from the
 *   event's own callback, so no code of ours was cut off half-way; logged, the process carries on.
 * - Any other uncaught exception is left to Node: after a synchronous throw escaped, the process's
 *   state is unknown, and ending it (for systemd to restart) is the safer answer.
 *
 * Installed by `run` and `run-once` only (`keepDaemonRunning`): library users and the reference server
 * keep Node's default.
 */
import type { Logger } from '../log/index.js';

/** The system calls of a connection, and the errors a connection ends with. */
const SOCKET_SYSCALLS = new Set(['read', 'write', 'writev', 'connect', 'shutdown']);
const SOCKET_CODES = new Set(['ECANCELED', 'ECONNRESET', 'ECONNABORTED', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN']);

/** True for a system error of a connection (`write ECANCELED`, `read ECONNRESET`, …). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { syscall, code } = error as NodeJS.ErrnoException;
  return typeof syscall === 'string' && SOCKET_SYSCALLS.has(syscall) && typeof code === 'string' && SOCKET_CODES.has(code);
}

/** Logs every unhandled rejection as an error and keeps the process running. Returns the remover. */
export function keepRunningOnUnhandledRejection(logger: Logger): () => void {
  const onRejection = (reason: unknown): void => {
    logger.error({ err: reason }, 'BUG: a promise was rejected and nothing handled it; the runner carries on. Please report this with the log');
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}

/**
 * Logs a connection's error that nothing listened for and keeps the process running; any other
 * uncaught exception still ends the process as Node ends it (its stack on stderr, exit code 1).
 * Returns the remover.
 */
export function keepRunningOnStrayConnectionErrors(logger: Logger): () => void {
  const onException = (error: Error): void => {
    if (isConnectionError(error)) {
      logger.error({ err: error }, 'BUG: a connection failed and nothing listened for its error; the runner carries on. Please report this with the log');
      return;
    }
    // Node's own answer, from a handler-free process: rethrown outside this listener.
    process.off('uncaughtException', onException);
    process.nextTick(() => {
      throw error;
    });
  };
  process.on('uncaughtException', onException);
  return () => process.off('uncaughtException', onException);
}

/** Both of the above, for a daemon that runs jobs (`run`, `run-once`). */
export function keepDaemonRunning(logger: Logger): void {
  keepRunningOnUnhandledRejection(logger);
  keepRunningOnStrayConnectionErrors(logger);
}
