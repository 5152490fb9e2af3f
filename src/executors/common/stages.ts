/**
 * GitLab Runner's stages of a job, as one table (common/build.go's BuildStage list in GitLab Runner
 * 19.3): the name as GitLab Runner spells it, the line that opens its log section, where ci-runner runs
 * it, the control variable that retries it, and what bounds its time. The job's stage sequence
 * (agent/job/stages.ts), the log sections, the job's timeline (`--debug`), script and container names
 * and docs/jobs.md all read this table: no stage name is spelled anywhere else.
 *
 * The order is the order a job runs them in. The user's steps (`script`, `release`, …: the payload's
 * `steps` other than `after_script`) run where the `step_*` entry stands, one stage each, named
 * `step_<name>` ({@link stepStage}).
 */
import { honoured, warned, type Support } from '../../util/compat.js';

/** Where ci-runner runs a stage. */
export type StageSite =
  /** In the runner process (artifacts, cache, the executor's own preparation). */
  | 'runner'
  /** On the runner's host, through a shell (get_sources: the executor's host shell). */
  | 'host'
  /** Where the job runs: the executor's shell, container or pod. */
  | 'executor'
  /** Not run by ci-runner (see the entry's `support`). */
  | 'none';

/** A job variable that retries a stage (1–10 attempts). */
export type AttemptsVariable = 'GET_SOURCES_ATTEMPTS' | 'RESTORE_CACHE_ATTEMPTS' | 'ARTIFACT_DOWNLOAD_ATTEMPTS' | 'EXECUTOR_JOB_SECTION_ATTEMPTS' | 'SECRETS_RETRIEVAL_ATTEMPTS';

/** A job variable that bounds a stage's time (a Go duration: `10m`, `1h30m`). */
export type TimeoutVariable = 'RUNNER_SCRIPT_TIMEOUT' | 'RUNNER_AFTER_SCRIPT_TIMEOUT';

export interface StageTimeout {
  /** The variable that sets it, when one does. */
  variable?: TimeoutVariable;
  /** Its own default, when it has one (else the rest of the job's timeout). */
  defaultMs?: number;
  /** What stops it, in words, for docs/jobs.md. */
  note: string;
}

export interface StageSpec {
  /** GitLab Runner's name; `step_*` stands for every user step. */
  name: string;
  /** The cyan line that opens its log section (GitLab Runner's GetStageDescription). */
  description: string;
  site: StageSite;
  attempts?: AttemptsVariable;
  timeout: StageTimeout;
  /** Where a user's commands run: the prefix of the names of their FF_SCRIPT_SECTIONS sections. */
  commandSections?: string;
  support: Support;
}

/** after_script's own limit, GitLab Runner's AfterScriptTimeout. */
export const AFTER_SCRIPT_TIMEOUT_MS = 5 * 60_000;

const JOB_TIMEOUT: StageTimeout = { note: 'the job timeout' };

/** Every stage, in the order a job runs them. */
export const STAGES = [
  {
    name: 'resolve_secrets',
    description: 'Resolving secrets',
    site: 'none',
    attempts: 'SECRETS_RETRIEVAL_ATTEMPTS',
    timeout: JOB_TIMEOUT,
    support: warned('ci-runner resolves no external secrets: it does not announce vault_secrets, so GitLab does not hand it jobs with secrets:'),
  },
  {
    name: 'prepare_executor',
    description: 'Preparing the "{executor}" executor',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured('the executor\'s preparation: image pull, services, network, pod'),
  },
  {
    name: 'prepare_script',
    description: 'Preparing environment',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured('the runner prints where the job runs; it needs no script of its own (GitLab Runner\'s removes files a previous job left, which ci-runner\'s state dir never shares)'),
  },
  {
    name: 'get_sources',
    description: 'Getting source from Git repository',
    site: 'host',
    attempts: 'GET_SOURCES_ATTEMPTS',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'clear_worktree',
    description: 'Deleting all tracked and untracked files due to source fetch failure',
    site: 'none',
    timeout: JOB_TIMEOUT,
    support: warned('a failed get_sources attempt is retried on the checkout as it is, not on an emptied one'),
  },
  {
    name: 'restore_cache',
    description: 'Restoring cache',
    site: 'runner',
    attempts: 'RESTORE_CACHE_ATTEMPTS',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'download_artifacts',
    description: 'Downloading artifacts',
    site: 'runner',
    attempts: 'ARTIFACT_DOWNLOAD_ATTEMPTS',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'step_*',
    description: 'Executing "{stage}" stage of the job script',
    site: 'executor',
    attempts: 'EXECUTOR_JOB_SECTION_ATTEMPTS',
    timeout: { variable: 'RUNNER_SCRIPT_TIMEOUT', note: 'RUNNER_SCRIPT_TIMEOUT for all steps together, else the job timeout' },
    commandSections: 'script_step',
    support: honoured('one stage per step of the payload (script, release), in its order'),
  },
  {
    name: 'after_script',
    description: 'Running after_script',
    site: 'executor',
    attempts: 'EXECUTOR_JOB_SECTION_ATTEMPTS',
    timeout: { variable: 'RUNNER_AFTER_SCRIPT_TIMEOUT', defaultMs: AFTER_SCRIPT_TIMEOUT_MS, note: 'RUNNER_AFTER_SCRIPT_TIMEOUT, else 5 minutes; a cancel does not stop it, the job timeout does' },
    commandSections: 'after_script_step',
    support: honoured(),
  },
  {
    name: 'archive_cache',
    description: 'Saving cache for successful job',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'archive_cache_on_failure',
    description: 'Saving cache for failed job',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'upload_artifacts_on_success',
    description: 'Uploading artifacts for successful job',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'upload_artifacts_on_failure',
    description: 'Uploading artifacts for failed job',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured(),
  },
  {
    name: 'cleanup_file_variables',
    description: 'Cleaning up project directory and file based variables',
    site: 'runner',
    timeout: JOB_TIMEOUT,
    support: honoured('the job\'s file variables are removed from the runner\'s state dir'),
  },
] as const satisfies readonly StageSpec[];

/** A stage's name: one of the table's, or a step's (`step_script`, `step_release`). */
export type FixedStage = Exclude<(typeof STAGES)[number]['name'], 'step_*'>;
export type StageName = FixedStage | `step_${string}`;

/** The step a job's script runs in (GitLab's `script` step). */
export const SCRIPT_STEP = 'script';
/** The step GitLab makes of `after_script`: its own stage, not a step stage. */
export const AFTER_SCRIPT_STEP = 'after_script';

/** The stage a user step runs in: GitLab Runner's StepToBuildStage (`step_` and the name in lower case). */
export function stepStage(step: string): `step_${string}` {
  return `step_${step.toLowerCase()}`;
}

/** The stage a step of the payload becomes: after_script has a stage of its own. */
export function stageOfStep(step: string): StageName {
  return step === AFTER_SCRIPT_STEP ? 'after_script' : stepStage(step);
}

/** The table's entry for `name` (every `step_*` stage shares one). */
export function stageSpec(name: StageName): StageSpec {
  const key = name.startsWith('step_') ? 'step_*' : name;
  const spec = (STAGES as readonly StageSpec[]).find((stage) => stage.name === key);
  if (!spec) throw new Error(`unknown stage ${name}`);
  return spec;
}

/** The line that opens `name`'s log section; `executor` names the executor for prepare_executor. */
export function stageDescription(name: StageName, executor = ''): string {
  return stageSpec(name).description.replace('{executor}', executor).replace('{stage}', name);
}
