import type { RunnerApi } from '../../client/api.js';
import type { FailureReason } from '../../protocol/v4/failure-reason.js';
import { silentLogger, type Logger } from '../../log/index.js';
import { sendFinalUpdate, textTrace } from '../../trace/final.js';
import { VERSION } from '../../util/version.js';
import type { RunnerConfig } from '../config/schema.js';
import { errorLine, header } from './messages.js';

/** How long a failure report is retried: long enough for a coordinator's brief outage, short enough not to hold `run-once`. */
const REPORT_DEADLINE_MS = 60_000;
const REPORT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Reports a build `failed` with a short explanatory trace (used when the build cannot be run at all:
 * an invalid payload or a failed setup), through the same final update as a job that ran. True when
 * the server has its answer: the report was delivered, or refused because the build is gone.
 * `build` is the job's id and token (v4 authenticates the report with the job token; without one a
 * v4 report cannot be made).
 */
export async function reportBuildFailed(
  client: RunnerApi,
  runner: Pick<RunnerConfig, 'name' | 'token'>,
  build: { id: number; token?: string | undefined; failure_reasons?: string[] | undefined },
  message: string,
  signal: AbortSignal,
  logger: Logger = silentLogger(),
  reason: FailureReason = 'runner_system_failure',
): Promise<boolean> {
  const trace = textTrace(`${header(VERSION, runner.name, runner.token, '', client.systemId)}${errorLine(`ERROR: Job failed: ${message}`)}`);
  const result = await sendFinalUpdate({
    client,
    api: client.api,
    job: { id: build.id, token: build.token ?? '', runnerToken: runner.token },
    state: 'failed',
    failure: { reason },
    ...(build.failure_reasons ? { acceptedReasons: build.failure_reasons } : {}),
    trace,
    deadlineMs: REPORT_DEADLINE_MS,
    requestTimeoutMs: REPORT_REQUEST_TIMEOUT_MS,
    signal,
    logger,
  });
  return result.delivered || result.refused;
}
