/**
 * The custom executor: GitLab Runner 19's driver protocol (docs/executors/custom.md). Per job,
 * config_exec (its JSON overrides builds_dir, cache_dir, hostname, the driver's name…), prepare_exec,
 * one run_exec per stage with the stage's script and GitLab Runner's stage name, and cleanup_exec at the
 * end whatever happened. Every call runs in the job's temporary dir (TMPDIR), leads its own process group
 * and sees the environment env.ts makes; the temporary dir goes with the job.
 *
 * Every stage runs where the driver runs it (`runsEveryStage`): the runner hands the stage sequence's
 * sources, cache and artifacts stages to it as scripts that call GitLab Runner's helper commands.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Logger } from '../../log/index.js';
import type { BuildPayload } from '../../protocol/types.js';
import { sleep } from '../../util/timers.js';
import { shellQuote } from '../common/quote.js';
import { generateScript, type ShellName } from '../common/script.js';
import type { Executor, ExportedVariable, PrepareRequest, StageRequest, StageResult } from '../types.js';
import { CONFIG_OUTPUT_LIMIT, parseConfigOutput, usingLine, type DriverConfig } from './config-output.js';
import { callDriver, DriverError, type DriverCall } from './driver.js';
import { driverEnv, type DriverFiles } from './env.js';
import type { CustomOptions } from './options.js';

export { DriverError } from './driver.js';

/** GitLab Runner's preparation attempts and the pause between them (common/consts.go). */
export const PREPARATION_ATTEMPTS = 3;
export const PREPARATION_RETRY_MS = 3_000;

export interface CustomExecutorOptions {
  custom: CustomOptions;
  /** `[[runners]] builds_dir` and `cache_dir`: the driver's unless config_exec says otherwise. */
  buildsDir: string;
  cacheDir: string;
  shell: ShellName;
  logger?: Logger;
  /** The pause between preparation attempts (tests shorten it). */
  retryMs?: number;
}

interface Prepared {
  files: DriverFiles;
  config: DriverConfig;
  build: BuildPayload;
  /** The job's variables as the driver's stages see them (CUSTOM_ENV_*). */
  variables: ExportedVariable[];
  slotDir: string;
  projectDir: string;
}

export class CustomExecutor implements Executor {
  readonly name = 'custom';
  /** Every stage, sources, cache and artifacts included, runs through run_exec. */
  readonly runsEveryStage = true;
  private prepared: Prepared | undefined;
  private finishing: Promise<void> | undefined;

  constructor(private readonly options: CustomExecutorOptions) {}

  /** The driver's builds dir and cache dir for this job (config_exec's, else the runner's). */
  get dirs(): { buildsDir: string; cacheDir: string; shared: boolean } {
    const config = this.prepared?.config;
    return { buildsDir: config?.buildsDir ?? this.options.buildsDir, cacheDir: config?.cacheDir ?? this.options.cacheDir, shared: config?.buildsDirIsShared ?? false };
  }

  /** The hostname config_exec gave, if any (prepare_script's `Running on … via <hostname>`). */
  get hostname(): string | undefined {
    return this.prepared?.config.hostname;
  }

  /** config_exec, then prepare_exec; a failure that is not the job's own is tried again, as GitLab Runner does. */
  async prepare(request: PrepareRequest): Promise<void> {
    const { custom } = this.options;
    if (custom.run_exec === '') throw new DriverError('DRIVER_NOT_CONFIGURED', 'custom executor is missing RunExec: set run_exec in [runners.custom]');
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.prepareOnce(request);
        return;
      } catch (error) {
        // The job's stop, a build failure and a configuration error are not retried.
        if (request.signal.aborted || attempt >= PREPARATION_ATTEMPTS || !(error instanceof DriverError) || error.code === 'DRIVER_NOT_CONFIGURED' || error.code === 'DRIVER_BUILD_FAILURE') throw error;
        request.log(`\x1b[31;1mERROR: Preparation failed: ${error.message}\x1b[0;m`);
        const pause = this.options.retryMs ?? PREPARATION_RETRY_MS;
        request.log(`Will be retried in ${pause / 1000}s ...`);
        await this.finish();
        this.finishing = undefined;
        await sleep(pause, request.signal).catch(() => undefined);
        if (request.signal.aborted) throw error;
      }
    }
  }

  private async prepareOnce(request: PrepareRequest): Promise<void> {
    const { custom } = this.options;
    const tmpDir = await mkdtemp(join(tmpdir(), 'custom-executor'));
    const files: DriverFiles = { tmpDir, responseFile: join(tmpDir, 'response.json'), exitCodeFile: join(tmpDir, 'build_exit_code') };
    await writeFile(files.responseFile, jobResponse(request.build), { mode: 0o600 });
    this.prepared = { files, config: { jobEnv: {} }, build: request.build, variables: request.variables, slotDir: request.slotDir, projectDir: request.projectDir };
    const log = (chunk: Uint8Array): void => request.log(Buffer.from(chunk).toString('utf8').replace(/\n$/, ''));
    if (custom.config_exec !== '') {
      let stdout = '';
      const outcome = await this.call('config_exec', custom.config_exec, custom.config_args, request.variables, {
        stdout: (chunk) => {
          if (stdout.length < CONFIG_OUTPUT_LIMIT) stdout += Buffer.from(chunk).toString('utf8');
        },
        stderr: log,
        signal: request.signal,
        timeoutMs: custom.config_exec_timeout,
      });
      this.checkPreparation('config_exec', outcome);
      this.prepared.config = parseConfigOutput(stdout);
    }
    request.log(usingLine(this.prepared.config.driver));
    if (this.prepared.config.shell !== undefined && this.prepared.config.shell !== this.options.shell) {
      request.warn(`WARNING: config_exec asked for shell ${JSON.stringify(this.prepared.config.shell)}; ci-runner writes ${this.options.shell} scripts (the runner's \`shell\`)`);
    }
    if (request.buildVariables) this.prepared.variables = await request.buildVariables();
    if (custom.prepare_exec === '') return;
    const outcome = await this.call('prepare_exec', custom.prepare_exec, custom.prepare_args, this.prepared.variables, { stdout: log, stderr: log, signal: request.signal, timeoutMs: custom.prepare_exec_timeout });
    this.checkPreparation('prepare_exec', outcome);
  }

  /** A preparation call that did not end well: its error (a build failure is the job's, not retried). */
  private checkPreparation(role: string, outcome: Awaited<ReturnType<typeof callDriver>>): void {
    if (outcome.kind === 'ok') return;
    if (outcome.kind === 'build-failure') throw new DriverError('DRIVER_BUILD_FAILURE', `${role}: exit status ${outcome.exitCode}`);
    if (outcome.timedOut) throw new DriverError('DRIVER_STOPPED', `${role} did not finish within its timeout (${role}_timeout) and was stopped`);
    throw new DriverError('DRIVER_STOPPED', `${role} was stopped`);
  }

  /** A host path under the job's slot dir as the driver's environment has it. */
  buildPath(hostPath: string): string {
    const prepared = this.prepared;
    if (!prepared) return hostPath;
    const { buildsDir, shared } = this.dirs;
    const rel = relative(prepared.slotDir, hostPath);
    if (rel === '..' || rel.startsWith('../') || rel.startsWith('/')) return hostPath;
    // Shared: `<builds_dir>/<token8>/<slot>/<project>` as on the runner's host; else `<builds_dir>/<project>`.
    const slot = shared ? join(buildsDir, relative(this.options.buildsDir, prepared.slotDir)) : buildsDir;
    return rel === '' ? slot : join(slot, rel);
  }

  /** One stage: its script written into the job's temporary dir, then `run_exec <run_args…> <script> <stage>`. */
  async runStage(request: StageRequest): Promise<StageResult> {
    const prepared = this.prepared;
    if (!prepared) throw new DriverError('DRIVER_NOT_CONFIGURED', 'the custom executor ran a stage before it was prepared');
    const dir = join(prepared.files.tmpDir, `script${randomBytes(5).toString('hex')}`);
    await mkdir(dir, { mode: 0o700 });
    const scriptPath = join(dir, 'script');
    await writeFile(scriptPath, await this.script(request), { mode: 0o700 });
    const { custom } = this.options;
    const stage = driverStageName(request.stage, request.output);
    const outcome = await this.call('run_exec', custom.run_exec, [...custom.run_args, scriptPath, stage], request.variables, {
      stdout: request.output,
      stderr: request.output,
      signal: request.signal,
    });
    if (outcome.kind === 'ok') return { exitCode: 0, aborted: false };
    if (outcome.kind === 'build-failure') return { exitCode: outcome.exitCode, aborted: false };
    return { exitCode: null, signal: outcome.killedAfterMs === undefined ? 'SIGTERM' : 'SIGKILL', aborted: true, ...(outcome.killedAfterMs !== undefined ? { killedAfterMs: outcome.killedAfterMs } : {}) };
  }

  /**
   * The stage's script: bash (or sh) with the job's variables exported; a file variable's content is
   * written beside the project dir (`<project dir>.tmp/<NAME>`, as GitLab Runner does) and its
   * path exported, since the runner's own copy is on the runner's host.
   */
  private async script(request: StageRequest): Promise<string> {
    const fileDir = `${this.buildPath(this.prepared?.projectDir ?? '')}.tmp`;
    const files: string[] = [];
    const variables: ExportedVariable[] = [];
    const { readFile } = await import('node:fs/promises');
    for (const variable of request.variables) {
      if (variable.file === undefined) {
        variables.push(variable);
        continue;
      }
      const path = `${fileDir}/${variable.key}`;
      const content = await readFile(variable.file, 'utf8').catch(() => '');
      files.push(`printf '%s' ${shellQuote(content)} > ${shellQuote(path)}`);
      variables.push({ key: variable.key, value: path });
    }
    const shebang = this.options.shell === 'bash' ? '#!/usr/bin/env bash' : '#!/bin/sh';
    // The driver's side starts empty: prepare_script and get_sources run before the project dir exists.
    const prelude = [shebang, `mkdir -p -- ${shellQuote(request.workDir)} || exit 1`];
    if (files.length > 0) prelude.push(`mkdir -p ${shellQuote(fileDir)} && chmod 700 ${shellQuote(fileDir)} || exit 1`, ...files.map((line) => `${line} || exit 1`));
    return generateScript({
      shell: this.options.shell,
      variables,
      workDir: request.workDir,
      commands: request.commands,
      echoCommands: request.echoCommands,
      ...(request.debugTrace ? { debugTrace: true } : {}),
      firstLine: prelude.join('\n'),
    });
  }

  /** One driver call with the job's environment. */
  private async call(
    role: string,
    program: string,
    args: readonly string[],
    variables: readonly ExportedVariable[],
    io: Pick<DriverCall, 'stdout' | 'stderr'> & { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<Awaited<ReturnType<typeof callDriver>>> {
    const prepared = this.prepared;
    if (!prepared) throw new DriverError('DRIVER_NOT_CONFIGURED', `${role} called before the job's temporary dir exists`);
    const { custom } = this.options;
    return callDriver({
      role,
      program,
      args,
      env: await driverEnv(prepared.files, prepared.config.jobEnv, variables, prepared.build),
      cwd: prepared.files.tmpDir,
      exitCodeFile: prepared.files.exitCodeFile,
      gracefulKillMs: custom.graceful_kill_timeout,
      forceKillMs: custom.force_kill_timeout,
      ...io,
    });
  }

  /**
   * cleanup_exec (its own timeout, not the job's: it runs after a cancel too), its output to the
   * runner's log; then the job's temporary dir is removed. Called once when the stages are over,
   * before the final update; again (a no-op) by `cleanup`.
   */
  finish(): Promise<void> {
    this.finishing ??= this.runCleanup();
    return this.finishing;
  }

  private async runCleanup(): Promise<void> {
    const prepared = this.prepared;
    if (!prepared) return;
    const { custom } = this.options;
    const logger = this.options.logger?.child({ component: 'custom-executor', cleanup_exec: custom.cleanup_exec });
    try {
      if (custom.cleanup_exec === '') return;
      const lines = (level: 'debug' | 'warn', std: 'out' | 'err') => (chunk: Uint8Array) => {
        for (const line of Buffer.from(chunk).toString('utf8').split('\n')) if (line !== '') logger?.[level]({ cleanup_std: std }, line);
      };
      const outcome = await this.call('cleanup_exec', custom.cleanup_exec, custom.cleanup_args, prepared.variables, { stdout: lines('debug', 'out'), stderr: lines('warn', 'err'), timeoutMs: custom.cleanup_exec_timeout }).catch((error: unknown) => error as Error);
      if (outcome instanceof Error) logger?.warn({ err: outcome }, `Cleanup script failed: ${outcome.message}`);
      else if (outcome.kind !== 'ok') logger?.warn(`Cleanup script failed: ${outcome.kind === 'build-failure' ? `exit status ${outcome.exitCode}` : 'stopped at its timeout'}`);
    } finally {
      await rm(prepared.files.tmpDir, { recursive: true, force: true });
      this.prepared = undefined;
    }
  }

  async cleanup(): Promise<void> {
    await this.finish();
  }
}

/**
 * JOB_RESPONSE_FILE's content: over v4 the coordinator's response as it came, as GitLab Runner writes
 * it; over v1 (which GitLab Runner's custom executor never spoke) ci-runner's job model, as JSON.
 */
function jobResponse(build: BuildPayload): string {
  if (build.response_body !== undefined) return build.response_body;
  const { response_body: _none, ...model } = build;
  return `${JSON.stringify(model)}\n`;
}

/**
 * The stage name run_exec is given. GitLab Runner 19 still gives drivers the user script's stage as
 * `build_script` (its `step_script` renamed back, with a warning in the job log each time), so drivers
 * written for it match on that name.
 */
function driverStageName(stage: string, output: (chunk: Uint8Array) => void): string {
  if (stage !== 'step_script') return stage;
  output(Buffer.from("\x1b[0;33mWARNING: Starting with version 17.0 the 'build_script' stage will be replaced with 'step_script': https://gitlab.com/groups/gitlab-org/-/epics/6112\x1b[0;m\n"));
  return 'build_script';
}
