/**
 * One job from pickup to final update: a slot and its dirs, the executor, the trace; then the stage
 * sequence (stages.ts), `Job succeeded` / `ERROR: Job failed: <reason>` and the final PUT through the
 * trace. The build-dir slot is given back as the final update goes out, while the executor's leftovers
 * are cleaned up: the next job of that slot waits for this cleanup, a stopping daemon for it and for
 * the state dir's removal after it (or its keeping, while the final update is still owed) (slots.ts).
 * The state dir keeps the process marker until the executor has cleaned and settled (its paced marker
 * sweep), so a crash in between is still swept at the next start (recover.ts).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Executor } from '../../executors/types.js';
import type { Logger } from '../../log/index.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { JobFailure, JobTrace } from '../../trace/index.js';
import type { FailureReason } from '../../protocol/v4/failure-reason.js';
import { timed, type MarkStep } from '../../util/timeline.js';
import type { RunnerConfig } from '../config/schema.js';
import { jobDirs, type JobDirs } from './build-dir.js';
import { resolveFeatureFlags } from '../config/feature-flags.js';
import { prepareDirsForUser } from './job-user.js';
import { keepOnlyFullLog, pruneKeptLogs } from './kept-logs.js';
import { JobSetupError } from './control-variables.js';
import { errorLine, header, notice } from './messages.js';
import { placeProjectDir } from './project-dir.js';
import type { StageRun } from './stage-run.js';
import { collectVariables, expandVariables, variableContext } from './variables.js';
import { VERSION } from '../../util/version.js';
import { reportBuildFailed } from './report-failed.js';
import type { JobServices } from './services.js';
import { executeStages, type StagesResult } from './stages.js';
import type { StageOutput } from './stage-run.js';
import type { ResolvedFlags } from '../config/feature-flags.js';
import { jobTimeline } from './timeline.js';

export { reportBuildFailed };
export { DEFAULT_JOB_TIMEOUT_S, JobStop } from './job-signal.js';
export { AFTER_SCRIPT_TIMEOUT_MS } from '../../executors/common/stages.js';
/** File in the job's state dir holding the executor's process marker (for crash recovery). */
export const MARKER_FILE = 'process-marker';
/** File in the job's state dir holding the job's cgroup directory, when it has one (for crash recovery). */
export const CGROUP_FILE = 'process-cgroup';

export interface JobOutcome {
  state: 'success' | 'failed';
  /** Why it failed. */
  reason?: string;
  /** Why it failed, as the runner names it before mapping it to what the server accepts (metrics). */
  failureReason?: FailureReason;
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
  const { slot, concurrentId, previous, release } = services.slots.acquire(runner.token, build.project_id);
  let dirs = jobDirs(runner.builds_dir, runner.token, slot, build, runner.executor === 'shell');
  const started = Date.now();
  const mark = jobTimeline(logger, performance.now());
  // GitLab Runner's wording, so an operator's greps and habits carry over; the logger's redaction
  // drops the credentials of repo_url.
  logger.info({ job: build.name, repo_url: build.repo_url, slot }, 'Checking for jobs... received');
  // What is left to do once the final update is out (or the job could not start).
  let cleanup: (() => Promise<void>) | undefined;
  try {
    // The slot's build dir is the previous job's until that job has cleaned up.
    await timed(mark, 'previous job of the slot cleaned up', () => previous);
    const executor = await timed(mark, 'executor created', async () => services.createExecutor(runner));
    cleanup = () => cleanUpExecutor(executor, logger);
    // With a job user, nothing between builds_dir and the state dir may be a link it planted: the
    // dirs are checked (and made) one by one instead of by a recursive mkdir that follows links.
    if (services.runAs && executor.name === 'shell') await prepareDirsForUser(services.runAs, runner.builds_dir, dirs);
    else await mkdir(dirs.stateDir, { recursive: true, mode: 0o700 });
    if (executor.marker) await writeFile(join(dirs.stateDir, MARKER_FILE), executor.marker, { mode: 0o600 });
    if (executor.cgroup) await writeFile(join(dirs.stateDir, CGROUP_FILE), executor.cgroup, { mode: 0o600 });
    logger.debug({ ms: Date.now() - started, containment: executor.containment }, 'dirs ready');
    const flags = jobFlags(build, runner, services.client.api);
    const trace = await timed(mark, 'trace started', () => services.startTrace({
      build,
      client: services.client,
      runnerToken: runner.token,
      stateDir: dirs.stateDir,
      outputLimitKiB: runner.output_limit,
      updateIntervalMs: runner.trace_update_interval * 1000,
      keepaliveIntervalMs: runner.trace_keepalive_interval * 1000,
      finalUpdateRetryLimit: runner.job_status_final_update_retry_limit,
      // v4 says which variables to mask; v1 masks every one that is not public.
      secrets: build.variables.filter((v) => (v.masked ?? !v.public) && v.value.length > 0).map((v) => v.value),
      signal: stop,
      logger,
      ...(mark ? { mark } : {}),
      // Servers of the legacy API predate both: their pages show neither stamps nor sections.
      ...(flags.stamped ? { timestamps: true } : {}),
      ...(build.trace_sections ? { sections: true } : {}),
      maskAllDefaultTokens: flags.resolved.on('FF_MASK_ALL_DEFAULT_TOKENS'),
    }));
    const write = (chunk: string | Uint8Array): void => {
      trace.write(chunk);
      services.onOutput?.(build, chunk);
    };
    const output = (): StageOutput => {
      const stream = trace.openStream();
      return {
        write: (chunk) => {
          stream.write(chunk);
          services.onOutput?.(build, chunk);
        },
        end: () => stream.end(),
      };
    };
    const run = { started, slot, concurrentId, dirs, trace, write, output, executor, flags: flags.resolved, stop, logger, ...(mark ? { mark } : {}) };
    const placed = await placeProject(build, services, run);
    if (!(placed instanceof JobSetupError)) run.dirs = dirs = placed;
    const result = placed instanceof JobSetupError ? refusedBeforeStages(services, run, placed) : await executeStages(build, services, run);
    write(result.state === 'success' ? notice('Job succeeded') : errorLine(`ERROR: Job failed: ${result.reason ?? 'unknown error'}`));
    cleanup = undefined;
    const final = await finishJob({ trace, result, executor, dirs, release, slots: services.slots, logger, ...(mark ? { mark } : {}) });
    const delivered = isDelivered(final);
    const duration_s = Math.round((Date.now() - started) / 100) / 10;
    const fields = { state: result.state, reason: result.reason, finalStatus: final.status, duration_s };
    logger.info(fields, result.state === 'success' ? 'Job succeeded' : 'Job failed');
    const failureReason = result.state === 'failed' ? (result.failure?.reason ?? 'script_failure') : undefined;
    return { state: result.state, ...(result.reason !== undefined ? { reason: result.reason } : {}), ...(failureReason ? { failureReason } : {}), delivered };
  } catch (error) {
    // Only setup failures (state dir, trace start) land here; report them without the trace module.
    logger.error({ err: error }, 'job could not start');
    const delivered = await reportBuildFailed(services.client, runner, build, `the runner could not start the job: ${(error as Error).message}`, stop, logger);
    return { state: 'failed', reason: (error as Error).message, failureReason: 'runner_system_failure', delivered };
  } finally {
    const work = cleanup;
    release(work ? timed(mark, 'cleanup', work).catch((error: unknown) => logger.warn({ err: error }, 'cleaning up after the job failed')) : undefined);
  }
}

/**
 * The job's feature flags (feature-flags.ts) and whether its lines are stamped: FF_TIMESTAMPS over
 * API v4 (the legacy API's servers predate stamps; a flag set for such a job says so in its log).
 */
function jobFlags(build: BuildPayload, runner: RunnerConfig, api: 'v1' | 'v4'): { resolved: ResolvedFlags; stamped: boolean } {
  const environment = runner.environment.flatMap((entry) => {
    const eq = entry.indexOf('=');
    return eq > 0 ? [{ key: entry.slice(0, eq), value: entry.slice(eq + 1) }] : [];
  });
  const resolved = resolveFeatureFlags(runner.feature_flags, [...environment, ...build.variables]);
  const asked = runner.feature_flags.FF_TIMESTAMPS === true || [...environment, ...build.variables].some((v) => v.key === 'FF_TIMESTAMPS');
  if (api === 'v1' && asked && resolved.on('FF_TIMESTAMPS')) {
    return { resolved: { ...resolved, warnings: [...resolved.warnings, 'FF_TIMESTAMPS: the lines of a job of the legacy API (/ci/api/v1) are not stamped: its servers predate stamps'] }, stamped: false };
  }
  return { resolved, stamped: api === 'v4' && resolved.on('FF_TIMESTAMPS') };
}

/** The job's dirs with its project dir where GIT_CLONE_PATH or GIT_STRATEGY puts it (project-dir.ts), or why not. */
async function placeProject(build: BuildPayload, services: JobServices, run: StageRun): Promise<JobDirs | JobSetupError> {
  const { runner } = services;
  const buildsDir = run.executor.buildsDir;
  const variables = expandVariables(collectVariables({ ...variableContext(build, services, run), projectDir: '', buildsDir: buildsDir ?? runner.builds_dir }));
  return placeProjectDir({ dirs: run.dirs, variables, buildsDir, runner, customByDefault: run.executor.buildsDir !== undefined }).catch((error: unknown) => {
    if (error instanceof JobSetupError) return error;
    throw error;
  });
}

/** A job refused before its first stage: the trace's header and the reason, as the stages would end it. */
function refusedBeforeStages(services: JobServices, run: StageRun, error: JobSetupError): StagesResult {
  run.write(header(VERSION, services.runner.name, services.runner.token, run.flags.header, services.client.systemId));
  return { state: 'failed', reason: error.message, failure: { reason: error.reason } };
}

interface JobEnd {
  trace: JobTrace;
  result: { state: 'success' | 'failed'; failure?: JobFailure };
  executor: Executor;
  dirs: JobDirs;
  release: (cleanup?: Promise<void>) => void;
  slots: JobServices['slots'];
  logger: Logger;
  mark?: MarkStep;
}

/**
 * The final update, and the cleanup beside it. The slot goes back as the update goes out, the
 * executor's cleanup under way: a job the update makes pending (the next stage's) can reach the runner
 * before the update's answer does, and it should find this slot free and its checkout there, not take
 * another slot and clone. The state dir holds the trace until the server has it: it goes after both.
 */
async function finishJob(end: JobEnd): Promise<Awaited<ReturnType<JobTrace['finish']>>> {
  const { trace, result, dirs, logger, mark } = end;
  const finishing = timed(mark, 'final update', () => trace.finish(result.state, result.failure));
  const cleaned = timed(mark, 'cleanup', () => cleanUpExecutor(end.executor, logger));
  end.release(cleaned);
  const owed = finishing.then(isDelivered, () => false);
  end.slots.track(owed.then(async (delivered) => {
    await cleaned;
    await end.executor.settled?.();
    await trace.settled();
    await removeStateDir(dirs, trace, delivered);
  }).catch((error: unknown) => logger.warn({ err: error }, 'cleaning up after the job failed')));
  return finishing;
}

/** The server has the final state, or refused it for good: nothing more is owed for the job. */
function isDelivered(final: { delivered: boolean; refused?: boolean }): boolean {
  return final.delivered || final.refused === true;
}

/** The executor's leftovers (processes, containers, networks); a failure is logged, never thrown. */
async function cleanUpExecutor(executor: Executor, logger: Logger): Promise<void> {
  await executor.cleanup().catch((error: unknown) => logger.warn({ err: error }, 'cleanup after the job failed'));
}

/** The state dir once nothing is owed for it; a trace cut by the output limit keeps its full log there. */
async function removeStateDir(dirs: JobDirs, trace: JobTrace, delivered: boolean): Promise<void> {
  if (delivered) {
    // A trace cut by the output limit told the user where the full log is: leave it there.
    if (trace.truncated) await keepOnlyFullLog(dirs.stateDir, trace.logPath);
    else await rm(dirs.stateDir, { recursive: true, force: true });
  }
  await pruneKeptLogs(dirs.tmpDir, basename(trace.logPath));
}
