/**
 * The daemon's stop, as GitLab Runner's: `graceful` (SIGQUIT) stops polling (an in-flight poll
 * finishes and its job runs) and lets running jobs finish, however long they take; `forceful`
 * (SIGTERM, SIGINT, or any stop after a graceful one) also abandons in-flight polls and aborts the
 * running jobs at once, each reported failed with `runner_interrupted`. How long a forceful stop may
 * take (`shutdown_timeout`) is the caller's to bound: the process decides when to give up waiting.
 * Until the first step the process is kept alive, even with nothing to poll.
 */
import type { Logger } from '../log/index.js';
import { JobInterrupted } from './job/job-signal.js';

export type StopMode = 'graceful' | 'forceful';

export class ShutdownSteps {
  private readonly polls = new AbortController();
  private readonly inFlight = new AbortController();
  private readonly jobs = new AbortController();
  private current: StopMode | undefined;
  /** A pending promise does not keep Node's event loop alive; this timer does, until shutdown. */
  private keepAlive: NodeJS.Timeout | undefined;
  /** Settles when shutdown starts: until then the daemon runs, even with nothing to poll. */
  readonly stopped: Promise<void>;

  constructor() {
    const stop = this.polls.signal;
    this.stopped = new Promise((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** The stop under way, if any. */
  get mode(): StopMode | undefined {
    return this.current;
  }

  /** Aborted at the first step: no new polls. */
  get stopPolling(): AbortSignal {
    return this.polls.signal;
  }

  /** Aborted by a forceful stop: in-flight polls are abandoned. */
  get abortPolls(): AbortSignal {
    return this.inFlight.signal;
  }

  /** Aborted, with a `JobInterrupted` saying why, by a forceful stop. */
  get stopJobs(): AbortSignal {
    return this.jobs.signal;
  }

  /** Keeps the process alive until shutdown starts. */
  holdOpen(): void {
    this.keepAlive ??= setInterval(() => undefined, 2 ** 31 - 1);
  }

  /**
   * Takes a step: a graceful stop once (a second one changes nothing), a forceful one once, from
   * running or from a graceful stop. `jobs` is how many run now and `cause` what asked (for the log
   * and the jobs' failure message).
   */
  step(mode: StopMode, jobs: number, logger: Logger, cause = 'a stop request'): void {
    clearInterval(this.keepAlive);
    if (this.current === 'forceful' || (mode === 'graceful' && this.current === 'graceful')) return;
    this.current = mode;
    this.polls.abort();
    if (mode === 'graceful') {
      logger.warn({ jobs, stop_signal: cause }, 'Starting graceful shutdown, waiting for builds to finish (SIGTERM or SIGINT aborts them)');
      return;
    }
    logger.warn({ jobs, stop_signal: cause }, 'Starting forceful shutdown: aborting running jobs');
    this.inFlight.abort();
    this.jobs.abort(new JobInterrupted(`aborted: the runner was stopped (${cause})`));
  }
}
