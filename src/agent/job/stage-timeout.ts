/**
 * GitLab Runner's `prepare_timeout` and `get_sources_timeout`: the stage runs under a signal of its
 * own that also fires at its timeout, and the job then fails as timed out (job_execution_timeout) with
 * GitLab Runner's words, "prepare timeout: exceeded timeout of 30s". Unset, the stage has the job's
 * signal alone; a value that is not positive or exceeds the job's timeout is warned about (in the
 * runner's log, as GitLab Runner does) and the job's timeout applies.
 */
import type { Logger } from '../../log/index.js';
import { goDuration } from '../health.js';
import { StageFailed } from './failure.js';
import type { JobSignal } from './job-signal.js';

/** `option`'s seconds for a job whose timeout is `jobTimeoutS`: a signal that ends at whichever comes first. */
export function stageTimeout(job: JobSignal, option: 'prepare_timeout' | 'get_sources_timeout', seconds: number | undefined, jobTimeoutS: number, logger: Logger): JobSignal {
  if (seconds === undefined) return job;
  if (seconds <= 0 || seconds > jobTimeoutS) {
    const why = seconds <= 0 ? 'must be greater than 0; using job timeout' : 'exceeds job timeout';
    logger.warn(`${option} (${goDuration(seconds)}) ${why} (${goDuration(jobTimeoutS)})${seconds > 0 ? '; using job timeout' : ''}`);
    return job;
  }
  const message = `${option === 'prepare_timeout' ? 'prepare' : 'get sources'} timeout: exceeded timeout of ${goDuration(seconds)}`;
  const expired = AbortSignal.timeout(seconds * 1000);
  const signal = AbortSignal.any([job.signal, expired]);
  const ownTimeout = (): boolean => expired.aborted && !job.signal.aborted;
  return {
    signal,
    timeout: job.timeout,
    leftMs: () => job.leftMs(),
    reason: () => (ownTimeout() ? message : job.reason()),
    check() {
      if (ownTimeout()) throw new StageFailed(message, { reason: 'job_execution_timeout' });
      job.check();
    },
    timedOut: () => ownTimeout() || job.timedOut(),
    canceled: () => job.canceled(),
    interrupted: () => job.interrupted(),
    dispose: () => undefined,
  };
}
