/**
 * The one stage sequence of a job, for every executor, in GitLab Runner's order and with its names
 * (executors/common/stages.ts; docs/jobs.md "Stages"): prepare_executor → prepare_script →
 * get_sources → restore_cache → download_artifacts → step_script (and step_release, …) → after_script
 * → archive_cache[_on_failure] → upload_artifacts_on_success|_on_failure → cleanup_file_variables,
 * each in its log section (log-sections.ts).
 *
 * Where each runs: get_sources on the host through the executor's host shell (`executor.host`, the
 * executor itself for the shell executor); cache, artifacts and cleanup in this process on the host;
 * the steps and after_script through the executor (user-steps.ts).
 */
import { stageOfStep } from '../../executors/common/stages.js';
import type { Executor } from '../../executors/types.js';
import { ExecutorSetupError } from '../../executors/types.js';
import { ExtractBudget } from '../../artifacts/budget.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { JobFailure } from '../../trace/index.js';
import { VERSION } from '../../util/version.js';
import { timed } from '../../util/timeline.js';
import type { StageContext } from './artifact-stages.js';
import { JobSetupError } from './control-variables.js';
import { archiveAndUploadInDriver, cleanupFileVariablesInDriver, prepareScriptInDriver, restoreAndDownloadInDriver, type DriverStageRun } from './driver-stages.js';
import { failureOf, StageFailed } from './failure.js';
import { DEFAULT_JOB_TIMEOUT_S, jobSignal, JobStop, type JobSignal } from './job-signal.js';
import { stageTimeout } from './stage-timeout.js';
import { extractedInto, giveProjectToUser, takeProject } from './job-user.js';
import { LogSections } from './log-sections.js';
import { errorLine, header, warning } from './messages.js';
import { prepare } from './prepare-stage.js';
import { archiveAndUpload, cleanupFileVariables, restoreAndDownload } from './runner-stages.js';
import { readScriptControls, type ScriptControls } from './script-controls.js';
import type { JobServices } from './services.js';
import { CheckoutError, getSources } from './sources-stage.js';
import { jobUser, type JobEnv, type StageRun } from './stage-run.js';
import { buildPath, stageShells } from './stage-shell.js';
import { afterScript, runSteps, stepCommands, userSteps, type StepsOutcome } from './user-steps.js';

export type { StageRun };

export interface StagesResult {
  state: 'success' | 'failed';
  reason?: string;
  /** Why it failed, as v4's final update says it. */
  failure?: JobFailure;
}

/** A job with `run:` asks for GitLab's step-runner, which ci-runner does not have. */
export class CiStepsRefused extends JobSetupError {
  constructor(message: string) {
    super(message, 'CI_STEPS', 'runner_configuration_error');
  }
}

/** Runs every stage of `build`; never rejects. */
export async function executeStages(build: BuildPayload, services: JobServices, run: StageRun): Promise<StagesResult> {
  const { runner } = services;
  const { dirs, write, executor } = run;
  write(header(VERSION, runner.name, runner.token, run.flags.header, services.client.systemId));
  for (const note of run.trace.notes) write(warning(note));
  const job = jobSignal(build.timeout, run.trace.cancelSignal, run.stop, (reason, canceled) => {
    if (!canceled) write(`\n${errorLine(`Stopping the job: ${reason}`)}`);
  });
  for (const line of run.flags.warnings) write(warning(`WARNING: ${line}`));
  const sections = new LogSections(write, build.trace_sections === true, executor.name);
  const ctx: StageContext = {
    build,
    client: services.client,
    projectDir: dirs.projectDir,
    stateDir: dirs.stateDir,
    log: (line) => write(line.endsWith('\n') ? line : `${line}\n`),
    signal: job.signal,
    ...(runner.artifacts_extract_limit > 0 ? { extractBudget: new ExtractBudget(runner.artifacts_extract_limit) } : {}),
  };
  const { shell, chain } = stageShells(build, services, run, sections);
  const steps = userSteps(build);

  let buildRan = false;
  let ok = true;
  let reason: string | undefined;
  let failure: JobFailure | undefined;
  let env: JobEnv | undefined;
  let script: ScriptControls | undefined;
  let status: StepsOutcome['status'] = 'failed';
  // An executor that runs every stage gets the runner's stages as scripts too (driver-stages.ts).
  let driver: DriverStageRun | undefined;
  // With a job user, the checkout is the daemon's (closed) whenever the daemon works in it (job-user.ts).
  const runAs = jobUser(services, executor);
  try {
    if (build.run) throw new CiStepsRefused('this job uses `run:` (CI steps, run by GitLab\'s step-runner), which ci-runner does not run; give the job a `script:` instead');
    const jobTimeoutS = build.timeout > 0 ? build.timeout : DEFAULT_JOB_TIMEOUT_S;
    const prepareSignal = stageTimeout(job, 'prepare_timeout', runner.prepare_timeout, jobTimeoutS, run.logger);
    env = await prepare(build, services, run, prepareSignal, sections);
    const prepared = env;
    if (executor.runsEveryStage) {
      const attempts = { restoreCache: env.controls.restoreCacheAttempts, downloadArtifacts: env.controls.artifactDownloadAttempts };
      driver = { build, services, ctx, executor, shell, variables: env.build, projectDir: buildPath(executor, dirs.projectDir), job, debug: env.controls.debugTrace, attempts };
      await prepareScriptInDriver(driver);
    }
    script = readScriptControls(env.host, job.leftMs());
    for (const line of script.warnings) write(warning(`WARNING: ${line}`));
    const options = { echo: true, workDir: dirs.projectDir, variables: env.build, debug: env.controls.debugTrace, scriptSections: run.flags.on('FF_SCRIPT_SECTIONS'), attempts: script.sectionAttempts };
    const first = steps[0];
    // With nothing to do between them, the first step runs in get_sources' process; not under
    // RUNNER_SCRIPT_TIMEOUT, which only the steps are bound by, nor get_sources_timeout, which must
    // not end the first step.
    const next =
      first && chain && script.scriptTimeoutMs === undefined && runner.get_sources_timeout === undefined
        ? { stage: stageOfStep(first.name), commands: stepCommands(first, runner, prepared), options: { ...options, signal: job.signal }, began: () => (buildRan = true) }
        : undefined;
    const chained = next && chain ? { run: chain, next } : undefined;
    const sourcesSignal = stageTimeout(job, 'get_sources_timeout', runner.get_sources_timeout, jobTimeoutS, run.logger);
    const result = await timed(run.mark, 'get_sources (all)', () => getSources(build, services, run, sourcesSignal, prepared, shell, sections, chained));
    if (!result) {
      if (runAs) await takeProject(dirs.projectDir, runAs);
      const inDriver = driver;
      await timed(run.mark, 'restore_cache and download_artifacts', () => (inDriver ? restoreAndDownloadInDriver(inDriver) : restoreAndDownload(build, services, ctx, job, prepared, sections)));
      if (runAs) await giveProjectToUser(runAs, dirs.projectDir, extractedInto(build));
      run.logger.debug({ ms: Date.now() - run.started }, 'sources, artifacts and cache ready');
      await executorReady(executor, run, job);
    }
    buildRan = true;
    const outcome = await runSteps(steps, result ? 1 : 0, result, { build, run, job, env, shell, script, options, runner });
    status = outcome.status;
    job.check();
    if (outcome.error) throw outcome.error;
  } catch (error) {
    ok = false;
    const known = error instanceof StageFailed || error instanceof JobStop || error instanceof JobSetupError || error instanceof ExecutorSetupError || error instanceof CheckoutError;
    reason = known ? error.message : `runner error: ${(error as Error).message}`;
    failure = error instanceof JobSetupError ? { reason: error.reason } : failureOf(error, job.timedOut(), job.canceled(), job.interrupted());
    if (!known) run.logger.error({ err: error }, 'job stage failed unexpectedly');
  }
  run.logger.debug({ ms: Date.now() - run.started }, 'build script done');

  if (buildRan && env && script) {
    const failed = await afterScript(build, { build, run, job, env, shell, script, runner }, status);
    if (failed && ok) {
      ok = false;
      reason = failed.message;
      failure = failed.failure;
    }
  }
  const stopNow = run.trace.stopNowSignal.aborted;

  // archive_cache, upload_artifacts; with a job user the checkout is the daemon's from here on,
  // also between jobs (nothing is collected from one it could not take back).
  const taken = runAs ? await takeProject(dirs.projectDir, runAs).then(() => undefined, (error: unknown) => error as Error) : undefined;
  if (taken) {
    run.logger.error({ err: taken }, 'cannot take the project dir back from the job user');
    ok = false;
    reason ??= `runner error: ${taken.message}`;
    failure ??= { reason: 'runner_system_failure' };
    buildRan = false;
  }
  // A server that asked to stop at once gets no cache saved and no artifacts (the job is over there).
  const sofar = { ok, buildRan: buildRan && !stopNow, env: stopNow ? undefined : env, executor, ...(reason ? { reason } : {}) };
  const inDriver = driver;
  const final = await timed(run.mark, 'archive_cache and upload_artifacts', () => (inDriver ? archiveAndUploadInDriver(inDriver, sofar) : archiveAndUpload(build, services, ctx, job, sofar, sections)));
  if (inDriver) await cleanupFileVariablesInDriver(inDriver, run.stop);
  else await cleanupFileVariables(build, services, run, env, sections);
  await executor.finish?.();
  job.dispose();
  if (final.ok) return { state: 'success' };
  return { state: 'failed', ...(final.reason ? { reason: final.reason } : {}), failure: final.reason === reason && failure ? failure : final.failure };
}

/** What prepare left starting (a pod) while the host fetched the sources, once it is there. */
async function executorReady(executor: Executor, run: StageRun, job: JobSignal): Promise<void> {
  const ready = executor.ready?.bind(executor);
  if (!ready) return;
  await timed(run.mark, 'executor ready', () => ready(job.signal)).catch((error: unknown) => {
    job.check();
    throw error;
  });
  job.check();
}
