/**
 * Why a job failed, as v4's final update names it (`failure_reason`, `exit_code`; docs/protocol-v4.md
 * §8.6), from what ended it: a script's exit status is `script_failure` with its exit code, the job
 * timeout `job_execution_timeout`, an image that could not be had `image_pull_failure`, the runner's
 * own errors `runner_system_failure`. A cancel is `job_canceled`, GitLab Runner's internal reason, which
 * no server lists: it goes out as `unknown_failure` (the server has the job canceled already). The text reason in the trace stays as it was.
 */
import { ExecutorSetupError } from '../../executors/types.js';
import type { FailureReason } from '../../protocol/v4/failure-reason.js';
import type { JobFailure } from '../../trace/final.js';
import { JobStop } from './job-signal.js';

/** A stage ended the job; its message is the failure reason, `failure` what v4 reports. */
export class StageFailed extends Error {
  constructor(
    message: string,
    readonly failure: JobFailure = { reason: 'script_failure' },
  ) {
    super(message);
  }
}

/** A script that exited non-zero (or died from a signal) as the reason the job failed. */
export function scriptFailed(stage: string, exitCode: number | null, signal: string | undefined): StageFailed {
  if (exitCode === null) return new StageFailed(`${stage === 'build_script' ? '' : `${stage}: `}killed by ${signal ?? 'a signal'}`);
  return new StageFailed(`exit status ${exitCode}`, { reason: 'script_failure', exitCode });
}

/**
 * The v4 failure of what ended a job that was not a {@link StageFailed}. A job the daemon aborted on
 * SIGTERM/SIGINT (`interrupted`) is `runner_interrupted` (sent as `unknown_failure` to a server that
 * does not list it, as GitLab Runner does).
 */
export function failureOf(error: unknown, timedOut: boolean, canceled: boolean, interrupted = false): JobFailure {
  if (error instanceof StageFailed) return error.failure;
  if (error instanceof JobStop) return { reason: timedOut ? 'job_execution_timeout' : canceled ? 'job_canceled' : interrupted ? 'runner_interrupted' : 'runner_system_failure' };
  if (error instanceof ExecutorSetupError) return { reason: error.reason ?? executorReason(error.code) };
  return { reason: 'runner_system_failure' };
}

function executorReason(code: string): FailureReason {
  if (code === 'IMAGE_UNAVAILABLE') return 'image_pull_failure';
  // An image the job names that the runner's settings refuse, or no image at all: a configuration matter.
  if (code === 'NO_IMAGE' || code === 'BAD_IMAGE' || code === 'IMAGE_NOT_ALLOWED') return 'runner_configuration_error';
  // The custom executor: no run_exec configured; a preparation driver that said the job failed (BUILD_FAILURE_EXIT_CODE).
  if (code === 'DRIVER_NOT_CONFIGURED') return 'runner_configuration_error';
  if (code === 'DRIVER_BUILD_FAILURE') return 'script_failure';
  return 'runner_system_failure';
}
