/**
 * The daemon's stop, in two steps: the first stops polling (an in-flight poll finishes and its job
 * runs) and gives running jobs `shutdown_timeout` before canceling them; a second one cancels them at
 * once and abandons in-flight polls. Until the first step the process is kept alive, even with
 * nothing to poll.
 */
import type { Logger } from '../log/index.js';
import { setLongTimeout, type LongTimer } from '../util/timers.js';
import { JobStop } from './job/run-job.js';

export class ShutdownSteps {
  private readonly polls = new AbortController();
  private readonly inFlight = new AbortController();
  private readonly jobs = new AbortController();
  private count = 0;
  private timer: LongTimer | undefined;
  /** A pending promise does not keep Node's event loop alive; this timer does, until shutdown. */
  private keepAlive: NodeJS.Timeout | undefined;
  /** Settles when shutdown starts: until then the daemon runs, even with nothing to poll. */
  readonly stopped: Promise<void>;

  constructor() {
    const stop = this.polls.signal;
    this.stopped = new Promise((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** Aborted at the first step: no new polls. */
  get stopPolling(): AbortSignal {
    return this.polls.signal;
  }

  /** Aborted at the second step: in-flight polls are abandoned. */
  get abortPolls(): AbortSignal {
    return this.inFlight.signal;
  }

  /** Aborted, with a `JobStop` saying why, when running jobs are to be canceled. */
  get stopJobs(): AbortSignal {
    return this.jobs.signal;
  }

  /** Keeps the process alive until shutdown starts. */
  holdOpen(): void {
    this.keepAlive ??= setInterval(() => undefined, 2 ** 31 - 1);
  }

  /** Takes the next step; `jobs` is how many run now (for the log). */
  step(jobs: number, timeoutS: number, logger: Logger): void {
    this.count += 1;
    clearInterval(this.keepAlive);
    if (this.count === 1) {
      logger.info({ jobs, timeoutS }, 'shutting down: no new jobs; waiting for running jobs');
      this.polls.abort();
      this.timer = setLongTimeout(
        () => this.cancelJobs(`the runner is shutting down and the job did not finish within shutdown_timeout (${timeoutS} s)`),
        timeoutS * 1000,
        { unref: true },
      );
    } else {
      logger.warn({ jobs }, 'forced shutdown: canceling running jobs');
      this.inFlight.abort();
      this.cancelJobs('the runner was stopped (forced shutdown)');
    }
  }

  /** Everything has ended: the shutdown_timeout timer is not needed any more. */
  finished(): void {
    this.timer?.clear();
  }

  private cancelJobs(reason: string): void {
    if (!this.jobs.signal.aborted) this.jobs.abort(new JobStop(reason));
  }
}
