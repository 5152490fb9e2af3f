/**
 * The daemon's last line against a promise that rejects with nothing listening. Node's default is
 * to end the process, which in a runner means every running job dies mid-build, its trace stops
 * and its slot's next job may not start. Each such rejection is a bug to be fixed where it arises
 * (the artifacts download's rejection on a full disk was one); this handler only keeps the
 * daemon and its jobs alive meanwhile and logs the bug loudly enough to be reported.
 *
 * Installed by `run` and `run-once` only: library users and the reference server keep Node's
 * default. Uncaught exceptions are left to Node: after a synchronous throw escaped, the process's
 * state is unknown, and ending it (for systemd to restart) is the safer answer.
 */
import type { Logger } from '../log/index.js';

/** Logs every unhandled rejection as an error and keeps the process running. Returns the remover. */
export function keepRunningOnUnhandledRejection(logger: Logger): () => void {
  const onRejection = (reason: unknown): void => {
    logger.error({ err: reason }, 'BUG: a promise was rejected and nothing handled it; the runner carries on. Please report this with the log');
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
