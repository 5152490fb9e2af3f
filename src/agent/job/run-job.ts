/**
 * One job from pickup to final update (PROTOCOL.md §9.1): prepare → get_sources → download_artifacts
 * → restore_cache → build_script → after_script → archive_cache → upload_artifacts, then
 * `Job succeeded` / `ERROR: Job failed: <reason>` and the final PUT through the trace.
 *
 * Stopping: the job signal combines the server's cancel (trace), the job timeout and the daemon's
 * stop; whichever fires first names the reason. after_script is not interrupted by cancel or timeout
 * (it has its own 5-minute limit), only by the daemon's stop.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { ExtractBudget } from '../../artifacts/budget.js';
import { classify } from '../../client/outcome.js';
import type { RunnerApiClient } from '../../client/runner-api.js';
import type { Executor, ExportedVariable } from '../../executors/types.js';
import type { Logger } from '../../log.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { JobTrace, StartTraceOptions } from '../../trace/index.js';
import { setLongTimeout } from '../../timers.js';
import { VERSION } from '../../version.js';
import type { RunnerConfig } from '../config/schema.js';
import type { ArtifactStages, StageContext } from './artifact-stages.js';
import { jobDirs, type JobDirs } from './build-dir.js';
import { JobSetupError, readControls, type JobControls } from './control-variables.js';
import { gitSourcesCommands } from './git-sources.js';
import { materializeFileVariables } from './file-variables.js';
import { keepOnlyFullLog, pruneKeptLogs } from './kept-logs.js';
import { errorLine, header, notice, warning } from './messages.js';
import { reportBuildFailed } from './report-failed.js';
import type { SlotAllocator } from './slots.js';
import { collectVariables, expandString, expandVariables } from './variables.js';

export { reportBuildFailed };

/** Job timeout when the payload has none (≤ 0), as in GitLab Runner (§10.5). */
export const DEFAULT_JOB_TIMEOUT_S = 7200;
/** after_script's own limit; cancel and the job timeout do not interrupt it (§9.1). */
export const AFTER_SCRIPT_TIMEOUT_MS = 5 * 60_000;
/** File in the job's state dir holding the executor's process marker (for crash recovery). */
export const MARKER_FILE = 'process-marker';

export interface JobServices {
  runner: RunnerConfig;
  client: RunnerApiClient;
  slots: SlotAllocator;
  stages: ArtifactStages;
  startTrace: (options: StartTraceOptions) => Promise<JobTrace>;
  createExecutor: (runner: RunnerConfig) => Executor | Promise<Executor>;
  logger: Logger;
  /** Observes each job's trace writes (the demo prints live logs). */
  onOutput?: (build: BuildPayload, chunk: string | Uint8Array) => void;
  /** Told when a job enters a stage (metrics: jobs running by stage). */
  onStage?: (build: BuildPayload, stage: string) => void;
}

export interface JobOutcome {
  state: 'success' | 'failed';
  /** Why it failed. */
  reason?: string;
  /** The server has the final state (or refused it for good). */
  delivered: boolean;
}

/** Why a job stopped early; the message is the trace's `ERROR: Job failed: <message>`. */
export class JobStop extends Error {}

class StageFailed extends Error {}

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
  logger.info({ job: build.name, slot }, 'job received');
  try {
    const executor = await services.createExecutor(runner);
    await mkdir(dirs.stateDir, { recursive: true, mode: 0o700 });
    if (executor.marker) await writeFile(join(dirs.stateDir, MARKER_FILE), executor.marker, { mode: 0o600 });
    logger.debug({ ms: Date.now() - started }, 'dirs ready');
    const trace = await services.startTrace({
      build,
      client: services.client,
      runnerToken: runner.token,
      stateDir: dirs.stateDir,
      outputLimitKiB: runner.output_limit,
      updateIntervalMs: runner.trace_update_interval * 1000,
      keepaliveIntervalMs: runner.trace_keepalive_interval * 1000,
      secrets: build.variables.filter((v) => !v.public && v.value.length > 0).map((v) => v.value),
      signal: stop,
      logger,
    });
    const write = (chunk: string | Uint8Array): void => {
      trace.write(chunk);
      services.onOutput?.(build, chunk);
    };
    let result: { state: 'success' | 'failed'; reason?: string };
    try {
      result = await executeStages(build, services, { started, dirs, trace, write, executor, stop, logger });
    } finally {
      await executor.cleanup().catch((error: unknown) => logger.warn({ err: error }, 'cleanup after the job failed'));
    }
    write(result.state === 'success' ? notice('Job succeeded') : errorLine(`ERROR: Job failed: ${result.reason ?? 'unknown error'}`));
    const finishing = Date.now();
    const final = await trace.finish(result.state);
    logger.debug({ ms: Date.now() - finishing }, 'final update done');
    const refusedForGood = classify('updateBuild', final.status) === 'final';
    if (final.delivered || refusedForGood) {
      // A trace cut by the output limit told the user where the full log is: leave it there.
      if (trace.truncated) await keepOnlyFullLog(dirs.stateDir, trace.logPath);
      else await rm(dirs.stateDir, { recursive: true, force: true });
    }
    await pruneKeptLogs(dirs.tmpDir, basename(trace.logPath));
    logger.info({ state: result.state, reason: result.reason, finalStatus: final.status, ms: Date.now() - started }, 'job finished');
    return { ...result, delivered: final.delivered || refusedForGood };
  } catch (error) {
    // Only setup failures (state dir, trace start) land here; report them without the trace module.
    logger.error({ err: error }, 'job could not start');
    const delivered = await reportBuildFailed(services.client, runner, build.id, `the runner could not start the job: ${(error as Error).message}`, stop);
    return { state: 'failed', reason: (error as Error).message, delivered };
  } finally {
    release();
  }
}

interface StageRun {
  started: number;
  dirs: JobDirs;
  trace: JobTrace;
  write: (chunk: string | Uint8Array) => void;
  executor: Executor;
  stop: AbortSignal;
  logger: Logger;
}

async function executeStages(build: BuildPayload, services: JobServices, run: StageRun): Promise<{ state: 'success' | 'failed'; reason?: string }> {
  const { runner } = services;
  const { dirs, write, executor } = run;
  write(header(VERSION, runner.name, runner.token));

  const timeoutS = build.timeout > 0 ? build.timeout : DEFAULT_JOB_TIMEOUT_S;
  const timeout = new AbortController();
  // A long timer: a timeout past ~24.8 days must not fire at once (Node's own timers would).
  const timer = setLongTimeout(() => timeout.abort(new JobStop(`execution took longer than ${timeoutS} seconds`)), timeoutS * 1000, { unref: true });
  const jobSignal = AbortSignal.any([run.trace.cancelSignal, timeout.signal, run.stop]);
  const stopReason = (): string => {
    if (run.trace.cancelSignal.aborted) return 'canceled';
    const reason: unknown = timeout.signal.aborted ? timeout.signal.reason : run.stop.reason;
    return reason instanceof Error ? reason.message : 'canceled';
  };
  const onStop = (): void => {
    write(`\n${errorLine(run.trace.cancelSignal.aborted ? 'The job was canceled on the server; stopping it.' : `Stopping the job: ${stopReason()}`)}`);
  };
  jobSignal.addEventListener('abort', onStop, { once: true });

  let buildRan = false;
  let ok = true;
  let reason: string | undefined;
  let variables: ExportedVariable[] = [];
  let controls: JobControls | undefined;
  const ctx: StageContext = {
    build,
    client: services.client,
    projectDir: dirs.projectDir,
    stateDir: dirs.stateDir,
    log: (line) => write(line.endsWith('\n') ? line : `${line}\n`),
    signal: jobSignal,
    ...(runner.artifacts_extract_limit > 0 ? { extractBudget: new ExtractBudget(runner.artifacts_extract_limit) } : {}),
  };
  const shell = (stage: string, commands: string[], options: { echo: boolean; workDir: string; signal: AbortSignal; debug?: boolean }) => {
    services.onStage?.(build, stage);
    return executor.runStage({
      stage,
      commands,
      echoCommands: options.echo,
      variables,
      workDir: options.workDir,
      scriptDir: dirs.stateDir,
      ...(options.debug ? { debugTrace: true } : {}),
      output: (chunk) => write(chunk),
      signal: options.signal,
    });
  };

  try {
    // 1. prepare
    write(notice(`Using ${executor.name === 'shell' ? 'Shell' : executor.name} executor...`));
    write(`Running on ${hostname()}...\n`);
    const expanded = expandVariables(
      collectVariables({
        build,
        environment: runner.environment,
        projectDir: dirs.projectDir,
        buildsDir: runner.builds_dir,
        runnerName: runner.name,
        runnerToken: runner.token,
      }),
    );
    controls = readControls(expanded, build.allow_git_fetch);
    variables = await materializeFileVariables(expanded, dirs.stateDir);
    await mkdir(dirs.slotDir, { recursive: true });
    checkStop(jobSignal, stopReason);

    run.logger.debug({ ms: Date.now() - run.started }, 'prepared');
    // 2. get_sources
    const sources = gitSourcesCommands({
      build,
      projectDir: dirs.projectDir,
      strategy: controls.gitStrategy,
      depth: controls.gitDepth,
      submodules: controls.submodules,
      ...(runner.pre_clone_script ? { preCloneScript: runner.pre_clone_script } : {}),
    });
    // With nothing to fetch and no pre-clone script there is nothing for a shell to do.
    const skipShell = controls.gitStrategy === 'none' && !runner.pre_clone_script;
    if (skipShell) {
      write(notice('Skipping Git repository setup'));
      await mkdir(dirs.projectDir, { recursive: true });
    }
    for (let attempt = 1; !skipShell; attempt += 1) {
      const result = await shell('get_sources', sources, { echo: false, workDir: dirs.slotDir, signal: jobSignal });
      checkStop(jobSignal, stopReason);
      if (result.exitCode === 0) break;
      if (attempt >= controls.getSourcesAttempts) throw new StageFailed(`getting sources failed: exit status ${result.exitCode ?? result.signal}`);
      write(warning(`Getting sources failed (attempt ${attempt} of ${controls.getSourcesAttempts}); retrying...`));
    }

    // 3. download_artifacts, 4. restore_cache
    await services.stages.downloadArtifacts(ctx, { attempts: controls.artifactDownloadAttempts }).catch((error: unknown) => {
      checkStop(jobSignal, stopReason);
      throw new StageFailed(`downloading artifacts failed: ${(error as Error).message}`);
    });
    checkStop(jobSignal, stopReason);
    if (build.options.cache) {
      await services.stages.restoreCache(ctx, cacheRequest(build, runner, variables)).catch((error: unknown) => {
        write(warning(`WARNING: restoring the cache failed: ${(error as Error).message}`));
      });
      checkStop(jobSignal, stopReason);
    }

    run.logger.debug({ ms: Date.now() - run.started }, 'sources, artifacts and cache ready');
    // 5. build_script
    const commands = [...lines(runner.pre_build_script), ...lines(build.commands), ...lines(runner.post_build_script)];
    write(notice('Executing the job script...'));
    buildRan = true;
    const result = await shell('build_script', commands, { echo: true, workDir: dirs.projectDir, signal: jobSignal, debug: controls.debugTrace });
    checkStop(jobSignal, stopReason);
    if (result.exitCode !== 0) throw new StageFailed(result.exitCode === null ? `killed by ${result.signal ?? 'a signal'}` : `exit status ${result.exitCode}`);
  } catch (error) {
    ok = false;
    reason = error instanceof StageFailed || error instanceof JobStop || error instanceof JobSetupError ? error.message : `runner error: ${(error as Error).message}`;
    if (!(error instanceof StageFailed || error instanceof JobStop || error instanceof JobSetupError)) run.logger.error({ err: error }, 'job stage failed unexpectedly');
  }

  run.logger.debug({ ms: Date.now() - run.started }, 'build script done');
  // 6. after_script: always once the build ran; its own timeout; only the daemon's stop interrupts it.
  const afterScript = build.options.after_script ?? [];
  if (buildRan && afterScript.length > 0 && !run.stop.aborted) {
    write(notice('Running after script...'));
    const afterSignal = AbortSignal.any([AbortSignal.timeout(AFTER_SCRIPT_TIMEOUT_MS), run.stop]);
    const after = await shell('after_script', afterScript, { echo: true, workDir: dirs.projectDir, signal: afterSignal, debug: controls?.debugTrace ?? false });
    if (after.aborted) write(warning('WARNING: after_script was stopped (timeout or runner shutdown)'));
    else if (after.exitCode !== 0) write(warning(`WARNING: after_script failed: exit status ${after.exitCode ?? after.signal}`));
  }

  // 7. archive_cache: only when everything so far succeeded.
  if (ok && build.options.cache && !jobSignal.aborted) {
    await services.stages.archiveCache(ctx, cacheRequest(build, runner, variables)).catch((error: unknown) => {
      write(warning(`WARNING: saving the cache failed: ${(error as Error).message}`));
    });
  }

  // 8. upload_artifacts: per artifacts.when; a failure fails an otherwise successful job.
  if (build.options.artifacts && buildRan && !jobSignal.aborted) {
    try {
      await services.stages.uploadArtifacts(ctx, { format: runner.artifacts_format, jobSucceeded: ok });
    } catch (error) {
      if (ok) {
        ok = false;
        reason = jobSignal.aborted ? stopReason() : `uploading artifacts failed: ${(error as Error).message}`;
      } else write(warning(`WARNING: uploading artifacts failed: ${(error as Error).message}`));
    }
  }
  if (ok && jobSignal.aborted) {
    ok = false;
    reason = stopReason();
  }
  timer.clear();
  jobSignal.removeEventListener('abort', onStop);
  return ok ? { state: 'success' } : { state: 'failed', ...(reason ? { reason } : {}) };
}

function checkStop(signal: AbortSignal, reason: () => string): void {
  if (signal.aborted) throw new JobStop(reason());
}

function lines(text: string | undefined): string[] {
  return text ? text.split('\n') : [];
}

function cacheRequest(build: BuildPayload, runner: RunnerConfig, variables: ExportedVariable[]) {
  const lookup = (name: string): string => variables.findLast((v) => v.key === name)?.value ?? '';
  const key = expandString(build.options.cache?.key ?? '', lookup).trim() || 'default';
  return { cacheDir: runner.cache_dir, runnerName: runner.name, key };
}
