/**
 * The one stage sequence of a job, for every executor (docs/protocol-v1.md §9.1): prepare → get_sources →
 * download_artifacts → restore_cache → build_script → after_script → archive_cache → upload_artifacts.
 *
 * Where each runs: get_sources on the host through the executor's host shell (`executor.host`, the
 * executor itself for the shell executor); artifacts and cache in this process on the host;
 * build_script and after_script through the executor. after_script is not interrupted by cancel or
 * timeout (it has its own 5-minute limit), only by the daemon's stop.
 */
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { ExtractBudget } from '../../artifacts/budget.js';
import type { Executor, ExportedVariable } from '../../executors/types.js';
import { ExecutorSetupError, JobOverLimitError } from '../../executors/types.js';
import { fileVariablePaths } from '../../executors/file-variables.js';
import type { BuildPayload, CacheOptions } from '../../protocol/types.js';
import { shortList, type JobFailure } from '../../trace/index.js';
import { VERSION } from '../../util/version.js';
import { hasCode } from '../../util/errors.js';
import { expandString } from '../../util/expand.js';
import { timed } from '../../util/timeline.js';
import type { RunnerConfig } from '../config/schema.js';
import type { CacheRequest, StageContext } from './artifact-stages.js';
import { JobSetupError, readControls } from './control-variables.js';
import { invalidFileVariables, materializeFileVariables } from './file-variables.js';
import { jobSignal, JobStop, type JobSignal } from './job-signal.js';
import { extractedInto, giveFilesToUser, giveProjectToUser, takeProject } from './job-user.js';
import { failureOf, scriptFailed, StageFailed } from './failure.js';
import { errorLine, header, notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import { CheckoutError, getSources } from './sources-stage.js';
import { jobUser, type JobEnv, type ShellRun, type StageRun } from './stage-run.js';
import { buildPath, stageShells } from './stage-shell.js';
import { collectVariables, expandVariables, variableContext } from './variables.js';

export type { StageRun };

/** after_script's own limit; cancel and the job timeout do not interrupt it (§9.1). */
export const AFTER_SCRIPT_TIMEOUT_MS = 5 * 60_000;

export interface StagesResult {
  state: 'success' | 'failed';
  reason?: string;
  /** Why it failed, as v4's final update says it. */
  failure?: JobFailure;
}

/** Runs every stage of `build`; never rejects. */
export async function executeStages(build: BuildPayload, services: JobServices, run: StageRun): Promise<StagesResult> {
  const { runner } = services;
  const { dirs, write, executor } = run;
  write(header(VERSION, runner.name, runner.token));
  for (const note of run.trace.notes) write(warning(note));
  const job = jobSignal(build.timeout, run.trace.cancelSignal, run.stop, (reason, canceled) => {
    write(`\n${errorLine(canceled ? 'The job was canceled on the server; stopping it.' : `Stopping the job: ${reason}`)}`);
  });
  const ctx: StageContext = {
    build,
    client: services.client,
    projectDir: dirs.projectDir,
    stateDir: dirs.stateDir,
    log: (line) => write(line.endsWith('\n') ? line : `${line}\n`),
    signal: job.signal,
    ...(runner.artifacts_extract_limit > 0 ? { extractBudget: new ExtractBudget(runner.artifacts_extract_limit) } : {}),
  };
  const { shell, chain } = stageShells(build, services, run);

  let buildRan = false;
  let ok = true;
  let reason: string | undefined;
  let failure: JobFailure | undefined;
  let env: JobEnv | undefined;
  // With a job user, the checkout is the daemon's (closed) whenever the daemon works in it (job-user.ts).
  const runAs = jobUser(services, executor);
  try {
    env = await timed(run.mark, 'prepare', () => prepare(build, services, run, job));
    const prepared = env;
    // 5. build_script: the server's `script` entries when it sends them (an entry spanning lines
    // stays one command).
    const script = build.options.script ?? lines(build.commands);
    const commands = [...lines(runner.pre_build_script), ...script, ...lines(runner.post_build_script)];
    const options = { echo: true, workDir: dirs.projectDir, variables: env.build, signal: job.signal, debug: env.controls.debugTrace };
    const executing = notice('Executing the job script...');
    // With nothing to do between them, the build stage runs in get_sources' process.
    const next = { commands, options, between: executing, began: () => (buildRan = true) };
    const chained = chain ? { run: chain, next } : undefined;
    let result = await timed(run.mark, 'get_sources (all)', () => getSources(build, services, run, job, prepared, shell, chained));
    if (!result) {
      if (runAs) await takeProject(dirs.projectDir, runAs);
      await timed(run.mark, 'download_artifacts and restore_cache', () => downloadAndRestore(build, services, ctx, job, prepared));
      if (runAs) await giveProjectToUser(runAs, dirs.projectDir, extractedInto(build));
      run.logger.debug({ ms: Date.now() - run.started }, 'sources, artifacts and cache ready');
      await executorReady(executor, run, job);
      write(executing);
      buildRan = true;
      result = await shell(executor, 'build_script', commands, options);
    }
    job.check();
    if (result.exitCode !== 0) throw scriptFailed('build_script', result.exitCode, result.signal);
  } catch (error) {
    ok = false;
    const known = error instanceof StageFailed || error instanceof JobStop || error instanceof JobSetupError || error instanceof ExecutorSetupError || error instanceof CheckoutError;
    reason = known ? error.message : `runner error: ${(error as Error).message}`;
    failure = error instanceof JobSetupError ? { reason: error.reason } : failureOf(error, job.timedOut(), job.canceled(), job.interrupted());
    if (!known) run.logger.error({ err: error }, 'job stage failed unexpectedly');
  }
  run.logger.debug({ ms: Date.now() - run.started }, 'build script done');

  if (buildRan && env) await afterScript(build, run, env, shell, ok ? 'success' : run.trace.cancelSignal.aborted ? 'canceled' : 'failed');
  const stopNow = run.trace.stopNowSignal.aborted;

  // 7. archive_cache, 8. upload_artifacts; with a job user the checkout is the daemon's from here on,
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
  const final = await timed(run.mark, 'archive_cache and upload_artifacts', () => archiveAndUpload(build, services, ctx, job, { ok, buildRan: buildRan && !stopNow, env: stopNow ? undefined : env, executor, ...(reason ? { reason } : {}) }));
  job.dispose();
  if (final.ok) return { state: 'success' };
  return { state: 'failed', ...(final.reason ? { reason: final.reason } : {}), failure: final.reason === reason && failure ? failure : final.failure };
}

/**
 * 6. after_script: always once the build ran; its own timeout; only the daemon's stop interrupts it.
 * `status` is GitLab Runner's CI_JOB_STATUS there (`running` during the script, its outcome here).
 */
async function afterScript(build: BuildPayload, run: StageRun, env: JobEnv, shell: ShellRun, status: 'success' | 'failed' | 'canceled'): Promise<void> {
  const commands = build.options.after_script ?? [];
  // A server that asked to stop at once (v4 `canceled`) gets no after_script; a graceful cancel does.
  if (commands.length === 0 || run.stop.aborted || run.trace.stopNowSignal.aborted) return;
  run.write(notice('Running after script...'));
  const signal = AbortSignal.any([AbortSignal.timeout(AFTER_SCRIPT_TIMEOUT_MS), run.stop, run.trace.stopNowSignal]);
  const variables = [...env.build, { key: 'CI_JOB_STATUS', value: status }];
  // A stage that cannot start rejects; here that is a warning like any after_script failure.
  const after = await shell(run.executor, 'after_script', commands, { echo: true, workDir: run.dirs.projectDir, variables, signal, debug: env.controls.debugTrace }).catch((error: unknown) => error as Error);
  if (after instanceof Error) run.write(warning(`WARNING: after_script failed: ${after.message}`));
  else if (after.aborted) run.write(warning('WARNING: after_script was stopped (timeout or runner shutdown)'));
  else if (after.exitCode !== 0) run.write(warning(`WARNING: after_script failed: exit status ${after.exitCode ?? after.signal}`));
}

/** 1. prepare: variables, controls, the executor's own preparation (docker: image, services). */
async function prepare(build: BuildPayload, services: JobServices, run: StageRun, job: JobSignal): Promise<JobEnv> {
  const { runner } = services;
  const { dirs, executor, write } = run;
  write(notice(`Using ${executor.name.charAt(0).toUpperCase()}${executor.name.slice(1)} executor...`));
  write(`Running on ${hostname()}...\n`);
  if (executor.containment) write(`Process containment: ${executor.containment}\n`);
  const collect = (projectDir: string, buildsDir: string) => expandVariables(collectVariables({ ...variableContext(build, services, run), projectDir, buildsDir }));
  const hostList = collect(dirs.projectDir, runner.builds_dir);
  const controls = readControls(hostList, { allowGitFetch: build.allow_git_fetch, defaultDepth: build.git_depth ?? 0, setByJob: setByJob(build, runner) });
  for (const line of controls.warnings) write(warning(`WARNING: ${line}`));
  const invalid = invalidFileVariables(hostList);
  if (invalid.length > 0) write(warning(`WARNING: file variables skipped, their names are not GitLab's (letters, digits and _ only): ${shortList(invalid)}`));
  const host = await materializeFileVariables(hostList, dirs.stateDir);
  const runAs = jobUser(services, executor);
  if (runAs) await giveFilesToUser(runAs, fileVariablePaths(host));
  await mkdir(dirs.slotDir, { recursive: true });
  job.check();
  if (executor.prepare) {
    // A stop during preparation (a pull, the wait for services) is reported as the stop, not as the
    // abort error it surfaces as.
    const prepared = executor.prepare({
      build,
      ...(run.mark ? { mark: run.mark } : {}),
      slot: run.slot,
      variables: host,
      slotDir: dirs.slotDir,
      projectDir: dirs.projectDir,
      stateDir: dirs.stateDir,
      log: (line) => write(`${line}\n`),
      warn: (line) => write(warning(line)),
      signal: job.signal,
    });
    await prepared.catch((error: unknown) => {
      job.check();
      throw error;
    });
    job.check();
  }
  // The build stages may see other paths (docker: /builds/…), known once the executor is prepared.
  const buildVariables = executor.buildPath
    ? await materializeFileVariables(collect(buildPath(executor, dirs.projectDir), buildPath(executor, dirs.slotDir)), dirs.stateDir, (path) => buildPath(executor, path))
    : host;
  run.logger.debug({ ms: Date.now() - run.started }, 'prepared');
  return { controls, host, build: buildVariables };
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

/** 3. download_artifacts, 4. restore_cache. */
async function downloadAndRestore(build: BuildPayload, services: JobServices, ctx: StageContext, job: JobSignal, env: JobEnv): Promise<void> {
  await services.stages.downloadArtifacts(ctx, { attempts: env.controls.artifactDownloadAttempts }).catch((error: unknown) => {
    job.check();
    throw new StageFailed(`downloading artifacts failed: ${(error as Error).message}`);
  });
  job.check();
  for (const cache of cachesOf(build)) {
    await services.stages.restoreCache(ctx, cacheRequest(cache, services, env.host)).catch((error: unknown) => {
      job.check();
      if (hasCode(error, 'CACHE_POLICY_UNKNOWN')) throw new StageFailed((error as Error).message);
      ctx.log(warning(`WARNING: restoring the cache failed: ${(error as Error).message}`));
    });
    job.check();
  }
}

/** 7. archive_cache (per cache:when, success by default), 8. upload_artifacts (per artifacts.when). */
async function archiveAndUpload(
  build: BuildPayload,
  services: JobServices,
  ctx: StageContext,
  job: JobSignal,
  sofar: { ok: boolean; reason?: string; buildRan: boolean; env: JobEnv | undefined; executor: Executor },
): Promise<{ ok: boolean; reason?: string; failure?: JobFailure }> {
  let { ok, reason } = sofar;
  let failure: JobFailure | undefined;
  const caches = cachesOf(build).filter((cache) => {
    const when = cache.when ?? 'on_success';
    return when === 'always' || (when === 'on_success') === ok;
  });
  // Where the build stages ran elsewhere (kubernetes), their files come back first, once.
  const wanted = caches.some((cache) => cache.policy !== 'pull') || build.options.artifacts !== undefined;
  if (sofar.executor.collect && sofar.buildRan && wanted && !job.signal.aborted) {
    try {
      await sofar.executor.collect(job.signal, (line) => ctx.log(warning(line)));
    } catch (error) {
      const message = `bringing the build's files back from the ${sofar.executor.name} executor failed: ${(error as Error).message}`;
      // A job that failed already keeps its reason; this one is worth a line.
      if (!ok) ctx.log(warning(`WARNING: ${message}`));
      const ownFault = error instanceof JobOverLimitError;
      return { ok: false, reason: job.signal.aborted ? job.reason() : (reason ?? message), failure: ok ? { reason: ownFault ? 'script_failure' : 'runner_system_failure' } : failureOf(new JobStop(job.reason()), job.timedOut(), job.canceled(), job.interrupted()) };
    }
  }
  for (const cache of caches) {
    if (!sofar.env || job.signal.aborted) continue;
    await services.stages.archiveCache(ctx, cacheRequest(cache, services, sofar.env.host)).catch((error: unknown) => {
      if (hasCode(error, 'CACHE_POLICY_UNKNOWN') && ok) {
        // As GitLab Runner: a policy that is none of GitLab's fails the job.
        ok = false;
        reason = (error as Error).message;
        failure = { reason: 'script_failure' };
      }
      ctx.log(warning(`WARNING: saving the cache failed: ${(error as Error).message}`));
    });
  }
  // A failure to upload fails an otherwise successful job.
  if (build.options.artifacts && sofar.buildRan && !job.signal.aborted) {
    try {
      const variables = sofar.env?.host ?? [];
      const expand = (text: string): string => expandString(text, (name) => variables.findLast((v) => v.key === name)?.value ?? '');
      const level = sofar.env?.controls.artifactCompressionLevel;
      await services.stages.uploadArtifacts(ctx, { format: services.runner.artifacts_format, jobSucceeded: ok, expand, ...(level !== undefined ? { compressionLevel: level } : {}) });
    } catch (error) {
      if (ok) {
        ok = false;
        reason = job.signal.aborted ? job.reason() : `uploading artifacts failed: ${(error as Error).message}`;
        failure = job.signal.aborted ? failureOf(new JobStop(reason), job.timedOut(), job.canceled(), job.interrupted()) : { reason: 'script_failure' };
      } else ctx.log(warning(`WARNING: uploading artifacts failed: ${(error as Error).message}`));
    }
  }
  if (ok && job.signal.aborted) {
    ok = false;
    reason = job.reason();
    failure = failureOf(new JobStop(reason), job.timedOut(), job.canceled(), job.interrupted());
  }
  return { ok, ...(reason ? { reason } : {}), ...(failure ? { failure } : {}) };
}

/** The variables the job's payload and the runner's `environment` set (the predefined ones are the runner's own). */
function setByJob(build: BuildPayload, runner: RunnerConfig): Set<string> {
  return new Set([...build.variables.map((v) => v.key), ...runner.environment.map((entry) => entry.slice(0, entry.indexOf('=')))]);
}

function lines(text: string | undefined): string[] {
  return text ? text.split('\n') : [];
}

/** The job's caches: one map (§5.3) or a list of them. */
function cachesOf(build: BuildPayload): CacheOptions[] {
  const cache = build.options.cache;
  return cache === undefined ? [] : Array.isArray(cache) ? cache : [cache];
}

/** One cache of the job as the cache stages take it: the runner's cache dir and store, the job's variables. */
function cacheRequest(cache: CacheOptions, services: JobServices, variables: ExportedVariable[]): CacheRequest {
  const { runner } = services;
  return {
    cacheDir: runner.cache_dir,
    runnerName: runner.name,
    config: runner.cache,
    runnerToken: runner.token,
    ca: services.client.tls.ca,
    spec: cache,
    variable: (name) => variables.findLast((v) => v.key === name)?.value,
  };
}

