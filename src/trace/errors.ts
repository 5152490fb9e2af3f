/** Why the trace stopped a job: the server canceled or failed it, or refused the build token. */
import { CiRunnerError } from '../util/errors.js';

export type JobAbortCode = 'JOB_CANCELED' | 'JOB_FORBIDDEN';

/** The reason `JobTrace.cancelSignal` aborts with. */
export class JobAbortedError extends CiRunnerError {
  declare readonly code: JobAbortCode;

  constructor(code: JobAbortCode, message: string) {
    super(code, message);
  }
}
