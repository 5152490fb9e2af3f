/**
 * The variables a job sees (docs/protocol-v1.md §10.10), lowest precedence first: the runner's `environment`,
 * the runner's defaults (GL1 `CI_BUILD_*` names plus the modern `CI_JOB_*`/`CI_COMMIT_*` aliases and
 * what GitLab Runner 19 sets before the job's own: CI_JOB_IMAGE, CI_CONCURRENT_ID, CI_JOB_TIMEOUT, …),
 * the payload's `variables` in order, then what GitLab Runner sets after them, so a job cannot change
 * it (CI_SHARED_ENVIRONMENT or CI_DISPOSABLE_ENVIRONMENT, CI_RUNNER_VERSION, CI_RUNNER_REVISION,
 * CI_RUNNER_EXECUTABLE_ARCH, RUNNER_TEMP_PROJECT_DIR). Each value is then expanded once against the
 * whole list.
 */
import type { BuildPayload } from '../../protocol/types.js';
import { expandString } from '../../util/expand.js';
import { shortToken } from '../../util/short-token.js';
import { EXECUTABLE_ARCH, REVISION, RUNNER_NAME, VERSION } from '../../util/version.js';
import type { RunnerConfig } from '../config/schema.js';
import { DEFAULT_JOB_TIMEOUT_S } from './job-signal.js';

export interface JobVariable {
  key: string;
  value: string;
  public: boolean;
  /** Write the value to a file and export the file's path. */
  file?: boolean;
  /** Exported as it is: `$VAR` in it is not expanded (v4's `raw`). */
  raw?: boolean;
}

export interface VariableContext {
  build: BuildPayload;
  /** `environment = ["K=V"]` of the runner entry. */
  environment: readonly string[];
  projectDir: string;
  buildsDir: string;
  runnerName: string;
  runnerToken: string;
  /** The runner's private CA (PEM), given to the job as the file variable CI_SERVER_TLS_CA_FILE. */
  tlsCa?: string;
  /** CI_CONCURRENT_ID (over the runner's jobs) and CI_CONCURRENT_PROJECT_ID (the job's slot). */
  concurrentId?: number;
  concurrentProjectId?: number;
  /** The job timeout in seconds (CI_JOB_TIMEOUT). */
  timeoutS?: number;
  /** The build stages' environment outlives the job (shell: CI_SHARED_ENVIRONMENT) or not (CI_DISPOSABLE_ENVIRONMENT). */
  sharedEnvironment?: boolean;
}

/** What the job's variables are made of, but its dirs (which differ on each side of an executor). */
export function variableContext(
  build: BuildPayload,
  services: { runner: Pick<RunnerConfig, 'environment' | 'name' | 'token' | 'executor'>; client: { tls: { ca?: string | undefined } } },
  run: { slot: number; concurrentId: number },
): Omit<VariableContext, 'projectDir' | 'buildsDir'> {
  const { runner } = services;
  return {
    build,
    environment: runner.environment,
    runnerName: runner.name,
    runnerToken: runner.token,
    ...(services.client.tls.ca ? { tlsCa: services.client.tls.ca } : {}),
    concurrentId: run.concurrentId,
    concurrentProjectId: run.slot,
    timeoutS: build.timeout > 0 ? build.timeout : DEFAULT_JOB_TIMEOUT_S,
    sharedEnvironment: runner.executor === 'shell',
  };
}

/** `ref` lower-cased, anything but [a-z0-9] → `-`, trimmed of `-`, at most 63 bytes (§5.2). */
export function refSlug(ref: string): string {
  return ref.toLowerCase().replace(/[^a-z0-9]/g, '-').slice(0, 63).replace(/^-+|-+$/g, '');
}

/** The combined list before expansion, in precedence order (later wins). */
export function collectVariables(ctx: VariableContext): JobVariable[] {
  const { build } = ctx;
  const list: JobVariable[] = [];
  for (const entry of ctx.environment) {
    const eq = entry.indexOf('=');
    if (eq > 0) list.push({ key: entry.slice(0, eq), value: entry.slice(eq + 1), public: true });
  }
  const pub = (key: string, value: string | number): void => {
    list.push({ key, value: String(value), public: true });
  };
  const secret = (key: string, value: string): void => {
    list.push({ key, value, public: false });
  };
  if (build.options.image) pub('CI_JOB_IMAGE', build.options.image);
  pub('CI', 'true');
  pub('CI_DEBUG_TRACE', 'false');
  pub('CI_BUILD_REF', build.sha);
  pub('CI_BUILD_BEFORE_SHA', build.before_sha);
  pub('CI_BUILD_REF_NAME', build.ref);
  pub('CI_BUILD_ID', build.id);
  pub('CI_BUILD_NAME', build.name);
  pub('CI_BUILD_STAGE', build.stage);
  secret('CI_BUILD_REPO', build.repo_url);
  secret('CI_BUILD_TOKEN', build.token);
  if (build.tag) pub('CI_BUILD_TAG', build.ref);
  pub('CI_PROJECT_ID', build.project_id);
  pub('CI_PROJECT_DIR', ctx.projectDir);
  pub('CI_BUILDS_DIR', ctx.buildsDir);
  pub('CI_SERVER', 'yes');
  if (ctx.concurrentId !== undefined) pub('CI_CONCURRENT_ID', ctx.concurrentId);
  if (ctx.concurrentProjectId !== undefined) pub('CI_CONCURRENT_PROJECT_ID', ctx.concurrentProjectId);
  if (ctx.timeoutS !== undefined) pub('CI_JOB_TIMEOUT', ctx.timeoutS);
  pub('CI_SERVER_NAME', 'GitLab CI');
  pub('CI_SERVER_VERSION', '');
  pub('CI_SERVER_REVISION', '');
  pub('GITLAB_CI', 'true');
  // Modern names, so scripts written for newer runners work too.
  pub('CI_JOB_ID', build.id);
  pub('CI_JOB_NAME', build.name);
  pub('CI_JOB_STAGE', build.stage);
  // What after_script sees instead is its outcome (stages.ts).
  pub('CI_JOB_STATUS', 'running');
  secret('CI_JOB_TOKEN', build.token);
  pub('CI_COMMIT_SHA', build.sha);
  pub('CI_COMMIT_SHORT_SHA', build.sha.slice(0, 8));
  pub('CI_COMMIT_BEFORE_SHA', build.before_sha);
  pub('CI_COMMIT_REF_NAME', build.ref);
  pub('CI_COMMIT_REF_SLUG', refSlug(build.ref));
  if (build.tag) pub('CI_COMMIT_TAG', build.ref);
  secret('CI_REPOSITORY_URL', build.repo_url);
  pub('CI_RUNNER_EXECUTABLE', RUNNER_NAME);
  pub('CI_RUNNER_SHORT_TOKEN', shortToken(ctx.runnerToken));
  // As GitLab Runner does: a job's own git or curl can then trust the coordinator.
  if (ctx.tlsCa) list.push({ key: 'CI_SERVER_TLS_CA_FILE', value: ctx.tlsCa, public: true, file: true });
  for (const v of build.variables) list.push({ key: v.key, value: v.value, public: v.public, ...(v.file ? { file: true } : {}), ...(v.raw ? { raw: true } : {}) });
  // GitLab Runner's own, after the job's: a job does not change them.
  if (ctx.sharedEnvironment !== undefined) pub(ctx.sharedEnvironment ? 'CI_SHARED_ENVIRONMENT' : 'CI_DISPOSABLE_ENVIRONMENT', 'true');
  pub('CI_RUNNER_VERSION', VERSION);
  pub('CI_RUNNER_REVISION', REVISION);
  pub('CI_RUNNER_EXECUTABLE_ARCH', EXECUTABLE_ARCH);
  if (ctx.projectDir !== '') pub('RUNNER_TEMP_PROJECT_DIR', `${ctx.projectDir}.tmp`);
  return list;
}

/**
 * Expands `$NAME` and `${NAME}` once against `list` (the last definition of a name wins): unknown
 * names and positional/special parameters (`$1`, `$*`, `$?`) become empty, `$$` becomes `$`. A `raw`
 * variable is left as it is (and is what a reference to it expands to).
 * Returns the de-duplicated list, each name at the position of its last definition.
 */
export function expandVariables(list: readonly JobVariable[]): JobVariable[] {
  const last = new Map<string, JobVariable>();
  for (const v of list) {
    last.delete(v.key);
    last.set(v.key, v);
  }
  const lookup = (name: string): string => last.get(name)?.value ?? '';
  return [...last.values()].map((v) => (v.raw ? v : { ...v, value: expandString(v.value, lookup) }));
}

/** Reads a control variable (§10.6) from the expanded list. */
export function variableValue(list: readonly JobVariable[], key: string): string | undefined {
  for (let i = list.length - 1; i >= 0; i -= 1) if (list[i]?.key === key) return list[i]?.value;
  return undefined;
}

/** True for `true`/`1`/`yes`/`on`, case-insensitive. */
export function isTruthy(value: string | undefined): boolean {
  return value !== undefined && /^(true|1|yes|on)$/i.test(value.trim());
}
