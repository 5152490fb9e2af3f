/** Why the trace stopped a job: the server canceled or failed it, or refused the job token. */
import { CiRunnerError } from '../util/errors.js';

export type JobAbortCode = 'JOB_CANCELED' | 'JOB_FORBIDDEN';

/** The reason `JobTrace.cancelSignal` aborts with. */
export class JobAbortedError extends CiRunnerError {
  declare readonly code: JobAbortCode;
  /**
   * The script is stopped but after_script still runs (v1's cancel, v4's `Job-Status: canceling`).
   * False when the server asked to stop at once (v4's `canceled`/`failed`, or a v4 403).
   */
  readonly graceful: boolean;

  constructor(code: JobAbortCode, message: string, options: { graceful?: boolean } = {}) {
    super(code, message);
    this.graceful = options.graceful ?? true;
  }
}
