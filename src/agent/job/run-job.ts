/**
 * One job from pickup to final update: a slot and its dirs, the executor, the trace; then the stage
 * sequence (stages.ts), `Job succeeded` / `ERROR: Job failed: <reason>` and the final PUT through the
 * trace; then the job's state dir is removed (or kept while the final update is still owed).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../log/index.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { RunnerConfig } from '../config/schema.js';
import { jobDirs } from './build-dir.js';
import { prepareDirsForUser } from './job-user.js';
import { keepOnlyFullLog, pruneKeptLogs } from './kept-logs.js';
import { errorLine, notice } from './messages.js';
import { reportBuildFailed } from './report-failed.js';
import type { JobServices } from './services.js';
import { executeStages } from './stages.js';

export { reportBuildFailed };
export { DEFAULT_JOB_TIMEOUT_S, JobStop } from './job-signal.js';
export { AFTER_SCRIPT_TIMEOUT_MS } from './stages.js';
/** File in the job's state dir holding the executor's process marker (for crash recovery). */
export const MARKER_FILE = 'process-marker';
/** File in the job's state dir holding the job's cgroup directory, when it has one (for crash recovery). */
export const CGROUP_FILE = 'process-cgroup';

export interface JobOutcome {
  state: 'success' | 'failed';
  /** Why it failed. */
  reason?: string;
  /** The server has the final state (or refused it for good). */
  delivered: boolean;
}

/**
 * Runs `build`. `stop` is the daemon's: aborting it (with a JobStop reason) cancels the job.
 * Never rejects: every failure ends as a `failed` final update.
 */
export async function runJob(build: BuildPayload, services: JobServices, stop: AbortSignal): Promise<JobOutcome> {
  const { runner, logger: rootLogger } = services;
  const logger = rootLogger.child({ component: 'job', jobId: build.id, runner: runner.name });
  const { slot, release } = services.slots.acquire(runner.token, build.project_id);
  const dirs = jobDirs(runner.builds_dir, runner.token, slot, build);
  const started = Date.now();
  // GitLab Runner's wording, so an operator's greps and habits carry over; the logger's redaction
  // drops the credentials of repo_url.
  logger.info({ job: build.name, repo_url: build.repo_url, slot }, 'Checking for jobs... received');
  try {
    const executor = await services.createExecutor(runner);
    // With a job user, nothing between builds_dir and the state dir may be a link it planted: the
    // dirs are checked (and made) one by one instead of by a recursive mkdir that follows links.
    if (services.runAs && executor.name === 'shell') await prepareDirsForUser(services.runAs, runner.builds_dir, dirs);
    else await mkdir(dirs.stateDir, { recursive: true, mode: 0o700 });
    if (executor.marker) await writeFile(join(dirs.stateDir, MARKER_FILE), executor.marker, { mode: 0o600 });
    if (executor.cgroup) await writeFile(join(dirs.stateDir, CGROUP_FILE), executor.cgroup, { mode: 0o600 });
    logger.debug({ ms: Date.now() - started, containment: executor.containment }, 'dirs ready');
    const trace = await services.startTrace({
      build,
      client: services.client,
      runnerToken: runner.token,
      stateDir: dirs.stateDir,
      outputLimitKiB: runner.output_limit,
      updateIntervalMs: runner.trace_update_interval * 1000,
      keepaliveIntervalMs: runner.trace_keepalive_interval * 1000,
      // v4 says which variables to mask; v1 masks every one that is not public.
      secrets: build.variables.filter((v) => (v.masked ?? !v.public) && v.value.length > 0).map((v) => v.value),
      signal: stop,
      logger,
    });
    const write = (chunk: string | Uint8Array): void => {
      trace.write(chunk);
      services.onOutput?.(build, chunk);
    };
    let result: Awaited<ReturnType<typeof executeStages>>;
    try {
      result = await executeStages(build, services, { started, slot, dirs, trace, write, executor, stop, logger });
    } finally {
      await executor.cleanup().catch((error: unknown) => logger.warn({ err: error }, 'cleanup after the job failed'));
    }
    write(result.state === 'success' ? notice('Job succeeded') : errorLine(`ERROR: Job failed: ${result.reason ?? 'unknown error'}`));
    const finishing = Date.now();
    const final = await trace.finish(result.state, result.failure);
    logger.debug({ ms: Date.now() - finishing }, 'final update done');
    const refusedForGood = final.refused === true;
    if (final.delivered || refusedForGood) {
      // A trace cut by the output limit told the user where the full log is: leave it there.
      if (trace.truncated) await keepOnlyFullLog(dirs.stateDir, trace.logPath);
      else await rm(dirs.stateDir, { recursive: true, force: true });
    }
    await pruneKeptLogs(dirs.tmpDir, basename(trace.logPath));
    const duration_s = Math.round((Date.now() - started) / 100) / 10;
    const fields = { state: result.state, reason: result.reason, finalStatus: final.status, duration_s };
    logger.info(fields, result.state === 'success' ? 'Job succeeded' : 'Job failed');
    return { state: result.state, ...(result.reason !== undefined ? { reason: result.reason } : {}), delivered: final.delivered || refusedForGood };
  } catch (error) {
    // Only setup failures (state dir, trace start) land here; report them without the trace module.
    logger.error({ err: error }, 'job could not start');
    const delivered = await reportBuildFailed(services.client, runner, build, `the runner could not start the job: ${(error as Error).message}`, stop, logger);
    return { state: 'failed', reason: (error as Error).message, delivered };
  } finally {
    release();
  }
}
