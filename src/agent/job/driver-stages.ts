/**
 * The runner's own stages for an executor that runs every stage where the job runs (the custom
 * executor, `Executor.runsEveryStage`), as GitLab Runner writes them (shells/abstract.go): scripts
 * that call its helper commands — `gitlab-runner cache-extractor`, `artifacts-downloader`,
 * `cache-archiver`, `artifacts-uploader` — with its flags, each guarded by `gitlab-runner --version`
 * ("Missing gitlab-runner. … is disabled."), and a stage that has nothing to do is not run at all.
 * Store URLs are signed here, on the runner, so the store's credentials never reach the job.
 */
import type { StageName } from '../../executors/common/stages.js';
import { relative } from 'node:path';
import { artifactsOf, dependenciesToDownload, shouldUpload } from '../../artifacts/naming.js';
import type { CacheStageOptions } from '../../cache/index.js';
import { shellQuote } from '../../executors/common/quote.js';
import type { Executor, ExportedVariable } from '../../executors/types.js';
import type { BuildPayload, CacheOptions } from '../../protocol/types.js';
import { expandString } from '../../util/expand.js';
import type { StageContext } from './artifact-stages.js';
import type { JobFailure } from '../../trace/index.js';
import { failureOf, StageFailed } from './failure.js';
import { JobStop, type JobSignal } from './job-signal.js';
import type { JobServices } from './services.js';
import type { ShellRun, StageOptions } from './stage-run.js';
import { formatGoDuration } from '../../util/duration.js';

/** The command the scripts call, as GitLab Runner's custom executor names it (main.go: `custom.NewProvider("gitlab-runner")`). */
export const RUNNER_COMMAND = 'gitlab-runner';

const GREEN = '\\033[32;1m';
const YELLOW = '\\033[0;33m';
const RESET = '\\033[0;m';
const say = (colour: string, text: string): string => `printf '${colour}%s${RESET}\\n' ${shellQuote(text)}`;
const noticeLine = (text: string): string => say(GREEN, text);
const warningLine = (text: string): string => say(YELLOW, `WARNING: ${text}`);
const command = (args: readonly string[]): string => [RUNNER_COMMAND, ...args].map(shellQuote).join(' ');

/** GitLab Runner's guardRunnerCommand: the lines run only where `gitlab-runner` answers. */
function guarded(action: string, lines: readonly string[]): string[] {
  return [`if ${command(['--version'])} >/dev/null 2>/dev/null; then`, ...lines, 'else', warningLine(`Missing ${RUNNER_COMMAND}. ${action} is disabled.`), 'fi'];
}

/** Where the driver's stages run, and what they are handed. */
export interface DriverStageRun {
  build: BuildPayload;
  services: JobServices;
  ctx: StageContext;
  executor: Executor & { readonly dirs?: { cacheDir: string }; readonly hostname?: string };
  shell: ShellRun;
  /** The job's variables as the driver's stages see them. */
  variables: ExportedVariable[];
  /** The project dir on the driver's side. */
  projectDir: string;
  job: JobSignal;
  debug: boolean;
  /** RESTORE_CACHE_ATTEMPTS and ARTIFACT_DOWNLOAD_ATTEMPTS (1–10): how often each stage's script is run before the job fails. */
  attempts: { restoreCache: number; downloadArtifacts: number };
}

function options(run: DriverStageRun, signal: AbortSignal): StageOptions {
  return { echo: false, workDir: run.ctx.projectDir, variables: run.variables, signal, ...(run.debug ? { debug: true } : {}) };
}

function lookup(variables: readonly ExportedVariable[]): (name: string) => string | undefined {
  return (name) => variables.findLast((v) => v.key === name)?.value;
}

function cachesOf(build: BuildPayload): CacheOptions[] {
  const cache = build.options.cache;
  return cache === undefined ? [] : Array.isArray(cache) ? cache : [cache];
}

function cacheOptions(run: DriverStageRun, spec: CacheOptions): CacheStageOptions {
  const { runner } = run.services;
  return { cacheDir: run.executor.dirs?.cacheDir ?? runner.cache_dir, config: runner.cache, runnerName: runner.name, runnerToken: runner.token, ca: run.services.client.tls.ca, spec, variable: lookup(run.variables) };
}

/** `--file`: the key's archive under the driver's cache dir, relative to the project dir as GitLab Runner passes it. */
async function archiveFile(run: DriverStageRun, cacheDir: string, key: string): Promise<string | undefined> {
  const { localCacheFile } = await import('../../cache/index.js');
  const file = localCacheFile(cacheDir, run.build, key);
  return file === undefined ? undefined : relative(run.projectDir, file);
}

/**
 * Runs one stage's script, again while it fails, up to `attempts` times in all (GitLab Runner's
 * attemptExecuteStage: the driver's run_exec is called anew with the same stage); the last failure
 * fails the job with `what`.
 */
async function runScript(run: DriverStageRun, stage: StageName, lines: string[], what: string, attempts = 1): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const result = await run.shell(run.executor, stage, lines, options(run, run.job.signal));
    run.job.check();
    if (result.exitCode === 0) return;
    if (attempt >= attempts) throw new StageFailed(`${what}: exit status ${result.exitCode ?? result.signal}`, { reason: 'script_failure', ...(result.exitCode ? { exitCode: result.exitCode } : {}) });
    run.ctx.log(`WARNING: ${what} (attempt ${attempt} of ${attempts}); retrying...`);
  }
}

/** restore_cache, then download_artifacts, each only when it has something to do. */
export async function restoreAndDownloadInDriver(run: DriverStageRun): Promise<void> {
  const restore = await restoreCacheLines(run);
  if (restore.length > 0) await runScript(run, 'restore_cache', restore, 'restoring the cache failed', run.attempts.restoreCache);
  const deps = dependenciesToDownload(run.build.depends_on_builds, run.build.options.dependencies);
  if (deps.length === 0) return;
  const lines = deps.flatMap((dep) => [noticeLine(`Downloading artifacts for ${dep.name} (${dep.id})...`), command(['artifacts-downloader', '--url', run.services.runner.url, '--token', dep.token, '--id', String(dep.id)])]);
  await runScript(run, 'download_artifacts', guarded('Artifacts downloading', lines), 'downloading artifacts failed', run.attempts.downloadArtifacts);
}

async function restoreCacheLines(run: DriverStageRun): Promise<string[]> {
  const { alternateKey, setUpStage, storedKey } = await import('../../cache/index.js');
  const lines: string[] = [];
  for (const spec of cachesOf(run.build)) {
    const opts = cacheOptions(run, spec);
    const setup = await setUpStage(run.ctx, opts, 'restore').catch((error: unknown) => {
      throw new StageFailed((error as Error).message);
    });
    if (!setup) continue;
    const tries: string[][] = [];
    for (const key of [setup.plan.key, ...setup.plan.fallbackKeys]) {
      const stored = storedKey(key, setup.plan.hashed);
      const file = await archiveFile(run, opts.cacheDir, stored.name);
      if (file === undefined) continue;
      const args = ['cache-extractor', '--file', file, '--timeout', String(Math.round(setup.settings.requestTimeoutMs / 60_000))];
      const object = setup.remote?.objectName(stored);
      if (setup.remote && object) {
        args.push('--url', (await setup.remote.store.signGet(object, setup.remote.expiresSec, run.job.signal)).url.toString());
        // GitLab Runner's alternate URL: the key under the other FF_HASH_CACHE_KEYS naming.
        const other = alternateKey(key, setup.plan.hashed);
        const alternate = other && setup.remote.objectName(other);
        if (alternate) args.push('--alternate-url', (await setup.remote.store.signGet(alternate, setup.remote.expiresSec, run.job.signal)).url.toString());
      }
      tries.push([noticeLine(`Checking cache for ${key}...`), `if ${command(args)}; then`, noticeLine('Successfully extracted cache'), 'else', warningLine('Failed to extract cache')]);
    }
    // Each fallback key is tried in the `else` of the one before, as GitLab Runner nests them.
    const nested = tries.reduceRight<string[]>((inner, attempt) => [...attempt, ...inner, 'fi'], []);
    if (nested.length > 0) lines.push(...guarded('Extracting cache', nested));
  }
  return lines;
}

/** How the job stands when its build stages are over. */
export interface SoFar {
  ok: boolean;
  reason?: string;
  /** The build stage ran, and nothing asks to stop at once: archive_cache and upload_artifacts are owed. */
  buildRan: boolean;
}

/**
 * archive_cache (or archive_cache_on_failure), then upload_artifacts_on_success (or _on_failure), as
 * GitLab Runner runs them after the build; an upload that fails fails a job that had succeeded.
 */
export async function archiveAndUploadInDriver(run: DriverStageRun, sofar: SoFar): Promise<{ ok: boolean; reason?: string; failure?: JobFailure }> {
  const { ok } = sofar;
  const keep = { ok, ...(sofar.reason ? { reason: sofar.reason } : {}) };
  if (!sofar.buildRan || run.job.signal.aborted) return stopped(run, keep);
  try {
    const archive = await archiveCacheLines(run, ok);
    if (archive.length > 0) await runScript(run, ok ? 'archive_cache' : 'archive_cache_on_failure', archive, 'saving the cache failed');
  } catch (error) {
    if (run.job.signal.aborted) return stopped(run, keep);
    // A policy that is none of GitLab's fails the job, as GitLab Runner does; anything else is a warning.
    if (ok && (error as { code?: string }).code === 'CACHE_POLICY_UNKNOWN') return { ok: false, reason: (error as Error).message, failure: { reason: 'script_failure' } };
    run.ctx.log(`WARNING: ${(error as Error).message}`);
  }
  try {
    const upload = uploadLines(run, ok);
    if (upload.length > 0) await runScript(run, ok ? 'upload_artifacts_on_success' : 'upload_artifacts_on_failure', upload, 'uploading artifacts failed');
  } catch (error) {
    if (run.job.signal.aborted) return stopped(run, keep);
    if (!ok) {
      run.ctx.log(`WARNING: ${(error as Error).message}`);
      return keep;
    }
    return { ok: false, reason: (error as Error).message, failure: error instanceof StageFailed ? error.failure : { reason: 'runner_system_failure' } };
  }
  return stopped(run, keep);
}

/** The job's stop wins over an outcome that was still a success. */
function stopped(run: DriverStageRun, keep: { ok: boolean; reason?: string }): { ok: boolean; reason?: string; failure?: JobFailure } {
  if (!keep.ok || !run.job.signal.aborted) return keep;
  const reason = run.job.reason();
  return { ok: false, reason, failure: failureOf(new JobStop(reason), run.job.timedOut(), run.job.canceled(), run.job.interrupted()) };
}

/** prepare_script: where the job runs, printed there. */
export async function prepareScriptInDriver(run: DriverStageRun): Promise<void> {
  await runScript(run, 'prepare_script', prepareScriptLines(run.executor.hostname), 'preparing the environment failed');
}

/** cleanup_file_variables, whatever happened; only the daemon's stop cuts it short. Never throws. */
export async function cleanupFileVariablesInDriver(run: DriverStageRun, stop: AbortSignal): Promise<void> {
  const lines = cleanupFileVariablesLines(run.projectDir, run.variables);
  if (lines.length === 0) return;
  const result = await run.shell(run.executor, 'cleanup_file_variables', lines, options(run, stop)).catch((error: unknown) => error as Error);
  if (result instanceof Error) run.ctx.log(`WARNING: cleanup_file_variables failed: ${result.message}`);
  else if (result.exitCode !== 0) run.ctx.log(`WARNING: cleanup_file_variables failed: exit status ${result.exitCode ?? result.signal}`);
}

async function archiveCacheLines(run: DriverStageRun, succeeded: boolean): Promise<string[]> {
  const { alternateKey, setUpStage, storedKey } = await import('../../cache/index.js');
  const lines: string[] = [];
  for (const spec of cachesOf(run.build)) {
    const when = spec.when ?? 'on_success';
    if (!(when === 'always' || (when === 'on_success') === succeeded)) continue;
    const opts = cacheOptions(run, spec);
    const setup = await setUpStage(run.ctx, opts, 'save').catch((error: unknown) => {
      throw new StageFailed((error as Error).message);
    });
    if (!setup) continue;
    const key = setup.plan.key;
    const stored = storedKey(key, setup.plan.hashed);
    const file = await archiveFile(run, opts.cacheDir, stored.name);
    if (file === undefined) continue;
    const other = alternateKey(key, setup.plan.hashed);
    const alternateFile = (other && (await archiveFile(run, opts.cacheDir, other.name))) ?? file;
    const args = ['cache-archiver', '--file', file, '--alternate-file', alternateFile, '--timeout', String(Math.round(setup.settings.requestTimeoutMs / 60_000)), '--metadata', JSON.stringify({ cachekey: key })];
    const max = run.services.runner.cache?.MaxUploadedArchiveSize ?? 0;
    if (max > 0) args.push('--max-uploaded-archive-size', String(max));
    for (const path of spec.paths ?? []) args.push('--path', path);
    if (spec.untracked) args.push('--untracked');
    const object = setup.remote?.objectName(stored);
    if (setup.remote && object) {
      const put = await setup.remote.store.signPut(object, { cachekey: key }, setup.remote.expiresSec, run.job.signal);
      args.push('--url', put.url.toString());
      for (const [name, value] of Object.entries(put.headers)) args.push('--header', `${name}: ${value}`);
    }
    lines.push(...guarded('Creating cache', [noticeLine(`Creating cache ${key}...`), `if ${command(args)}; then`, noticeLine('Created cache'), 'else', warningLine('Failed to create cache'), 'fi']));
  }
  return lines;
}

function uploadLines(run: DriverStageRun, succeeded: boolean): string[] {
  const { build, services } = run;
  const expand = (text: string): string => expandString(text, (name) => lookup(run.variables)(name) ?? '');
  const lines: string[] = [];
  for (const spec of artifactsOf(build)) {
    if (!shouldUpload(spec.when, succeeded)) continue;
    const paths: string[] = [];
    for (const path of spec.paths ?? []) paths.push('--path', expand(path));
    for (const path of spec.exclude ?? []) paths.push('--exclude', expand(path));
    if (spec.untracked) paths.push('--untracked');
    if (paths.length === 0) continue;
    const args = ['artifacts-uploader', '--url', services.runner.url, '--token', build.token, '--id', String(build.id), '--timeout', formatGoDuration(services.runner.artifact.upload_timeout * 1000), '--response-header-timeout', formatGoDuration(services.runner.artifact.response_header_timeout * 1000), ...paths];
    if (spec.name) args.push('--name', expand(spec.name));
    if (spec.expire_in) args.push('--expire-in', spec.expire_in);
    if (spec.artifact_format) args.push('--artifact-format', spec.artifact_format);
    if (spec.artifact_type) args.push('--artifact-type', spec.artifact_type);
    lines.push(...guarded('Uploading artifacts', [noticeLine('Uploading artifacts...'), command(args)]));
  }
  return lines;
}

/** prepare_script: where the job runs, as GitLab Runner's bash prints it. */
export function prepareScriptLines(hostname: string | undefined): string[] {
  const where = hostname ? ` via ${hostname}` : '';
  return [`printf 'Running on %s${where.replace(/[%\\']/g, '')}...\\n' "$(hostname 2>/dev/null || uname -n)"`];
}

/** cleanup_file_variables: the file variables the stage scripts wrote beside the project dir. */
export function cleanupFileVariablesLines(projectDir: string, variables: readonly ExportedVariable[]): string[] {
  const files = variables.filter((v) => v.file !== undefined).map((v) => `${projectDir}.tmp/${v.key}`);
  return files.length === 0 ? [] : [`rm -f -- ${files.map(shellQuote).join(' ')}`];
}
