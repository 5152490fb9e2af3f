/**
 * The user's steps and after_script, as GitLab Runner 19 runs them (common/build.go's
 * executeUserScripts, shells/abstract.go's writeUserScript):
 *
 * - each step of the payload but after_script is a stage of its own, `step_<name>`, in the payload's
 *   order: `script`, then `release` when the job has `release:` (GitLab's release script, its
 *   `$VARIABLES` expanded by the runner as GitLab Runner does, since GitLab writes them for it);
 *   `pre_build_script` and `post_build_script` run around each;
 * - a step runs by its `when`: `on_success` while everything before succeeded, `on_failure` once
 *   something failed, `always` either way (GitLab only sends `on_success` steps; GitLab Runner's
 *   script path stops at the first failure, which is the same for them). A step's `allow_failure` is
 *   not honoured, as in GitLab Runner: the job log says so when a step sets it;
 * - RUNNER_SCRIPT_TIMEOUT bounds the steps together, the job timeout everything; after_script has
 *   RUNNER_AFTER_SCRIPT_TIMEOUT (5 minutes by default) within what is left of the job's timeout, and
 *   runs after a cancel, not after the job timed out or the server stopped it outright;
 * - a failed after_script leaves the job's outcome alone unless AFTER_SCRIPT_IGNORE_ERRORS is false.
 */
import { AFTER_SCRIPT_STEP, SCRIPT_STEP, stageOfStep, type StageName } from '../../executors/common/stages.js';
import type { StageResult } from '../../executors/types.js';
import type { BuildPayload, JobStep } from '../../protocol/types.js';
import type { JobFailure } from '../../trace/index.js';
import { expandString } from '../../util/expand.js';
import type { RunnerConfig } from '../config/schema.js';
import { scriptFailed, StageFailed } from './failure.js';
import type { JobSignal } from './job-signal.js';
import { warning } from './messages.js';
import type { ScriptControls } from './script-controls.js';
import type { JobEnv, ShellRun, StageOptions, StageRun } from './stage-run.js';

/** GitLab's `release:` step: its script is GitLab's, with `$VARIABLES` for the runner to fill in. */
const RELEASE_STEP = 'release';
const TIMEOUT_HELP = 'https://docs.gitlab.com/ci/runners/configure_runners/#set-script-and-after_script-timeouts';

/** The job's steps but after_script: the payload's (v4), or one `script` step (v1). */
export function userSteps(build: BuildPayload): JobStep[] {
  if (build.steps) return build.steps;
  const script = build.options.script ?? lines(build.commands);
  return [{ name: SCRIPT_STEP, script, when: 'on_success', allow_failure: false }];
}

/** A step's commands: pre_build_script, the step's (a release step's expanded), post_build_script. */
export function stepCommands(step: JobStep, runner: RunnerConfig, env: JobEnv): string[] {
  const variables = env.build;
  const lookup = (name: string): string => variables.findLast((v) => v.key === name)?.value ?? '';
  const script = step.name === RELEASE_STEP ? step.script.map((line) => expandString(line, lookup)) : step.script;
  return [...lines(runner.pre_build_script), ...script, ...lines(runner.post_build_script)];
}

/** How the steps ended: the first failure, if any, and whether after_script is owed. */
export interface StepsOutcome {
  error?: Error;
  /** CI_JOB_STATUS for after_script (GitLab Runner's runtime state). */
  status: 'success' | 'failed' | 'canceled' | 'timedout';
}

export interface StepsRun {
  build: BuildPayload;
  run: StageRun;
  job: JobSignal;
  env: JobEnv;
  shell: ShellRun;
  script: ScriptControls;
  options: Omit<StageOptions, 'signal'>;
  runner: RunnerConfig;
}

/**
 * Runs `steps` from `from` on (the ones before ran already, chained to get_sources, and ended as
 * `first`); never rejects for a step's failure.
 */
export async function runSteps(steps: readonly JobStep[], from: number, first: StageResult | undefined, s: StepsRun): Promise<StepsOutcome> {
  const { run, job } = s;
  const own = s.script.scriptTimeoutMs === undefined ? undefined : AbortSignal.timeout(s.script.scriptTimeoutMs);
  const signal = own ? AbortSignal.any([job.signal, own]) : job.signal;
  let error: Error | undefined;
  const ended = (stage: StageName, result: StageResult): void => {
    if (result.aborted && (own?.aborted || job.timedOut())) run.write(warning(`WARNING: ${stage} could not run to completion because the timeout was exceeded. For more control over job and script timeouts see: ${TIMEOUT_HELP}`));
    if (result.exitCode !== 0 && !error) error = own?.aborted && !job.signal.aborted ? new StageFailed('script timeout: context deadline exceeded', { reason: 'job_execution_timeout' }) : scriptFailed(stage, result.exitCode, result.signal);
  };
  if (first) ended(stageOfStep(steps[0]?.name ?? SCRIPT_STEP), first);
  for (const step of steps.slice(from)) {
    if (signal.aborted) break;
    if (!(step.when === 'always' || (step.when === 'on_success') === (error === undefined))) continue;
    const stage = stageOfStep(step.name);
    if (step.allow_failure) run.write(warning(`WARNING: step ${step.name}: allow_failure is not honoured (GitLab Runner does not either); a failure fails the job`));
    const result = await s.shell(run.executor, stage, stepCommands(step, s.runner, s.env), { ...s.options, signal });
    ended(stage, result);
  }
  if (job.canceled()) run.write(warning('WARNING: script canceled externally (UI, API)'));
  const status = job.canceled() ? 'canceled' : own?.aborted || job.timedOut() ? 'timedout' : error ? 'failed' : 'success';
  job.check();
  return { ...(error ? { error } : {}), status };
}

/** What after_script did to the job: nothing, or (AFTER_SCRIPT_IGNORE_ERRORS false) its failure. */
export async function afterScript(build: BuildPayload, s: Omit<StepsRun, 'options'>, status: StepsOutcome['status']): Promise<StageFailed | undefined> {
  const { run, job, env, script } = s;
  const commands = build.options.after_script ?? [];
  // A server that asked to stop at once (v4 `canceled`) gets no after_script, nor does a job whose
  // time is up; a graceful cancel does.
  if (commands.length === 0 || run.stop.aborted || run.trace.stopNowSignal.aborted || job.timedOut()) return undefined;
  const own = AbortSignal.timeout(script.afterScriptTimeoutMs);
  const signal = AbortSignal.any([own, job.timeout, run.stop, run.trace.stopNowSignal]);
  const variables = [...env.build, { key: 'CI_JOB_STATUS', value: status }];
  const stage = stageOfStep(AFTER_SCRIPT_STEP);
  // A stage that cannot start rejects; that is a failure of after_script like any other.
  const options = { echo: true, workDir: run.dirs.projectDir, variables, signal, debug: env.controls.debugTrace, notice: 'Running after script...', attempts: script.sectionAttempts, scriptSections: run.flags.on('FF_SCRIPT_SECTIONS') };
  const after = await s.shell(run.executor, stage, commands, options).catch((error: unknown) => error as Error);
  if (!(after instanceof Error) && after.aborted && (own.aborted || job.timedOut())) {
    run.write(warning(`WARNING: ${stage} could not run to completion because the timeout was exceeded. For more control over job and script timeouts see: ${TIMEOUT_HELP}`));
  }
  if (job.timedOut()) return undefined;
  const failure = after instanceof Error ? new StageFailed(after.message, { reason: 'runner_system_failure' }) : after.exitCode !== 0 ? scriptFailed(stage, after.exitCode, after.signal) : undefined;
  if (!failure) return undefined;
  if (!script.afterScriptIgnoreErrors) return failure;
  run.write(warning(`WARNING: after_script failed, but job will continue unaffected: ${failure.message}`));
  return undefined;
}

/** The v4 failure of a step's error. */
export function stepFailure(error: Error): JobFailure | undefined {
  return error instanceof StageFailed ? error.failure : undefined;
}

function lines(text: string | undefined): string[] {
  return text ? text.split('\n') : [];
}
