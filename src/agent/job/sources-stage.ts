/**
 * 2. get_sources, on the host through the executor's host shell (the executor itself for shell), with
 * its retries; the job's get-sources hooks around it in the job's own environment (sources-hooks.ts).
 * Under `--debug` each git command is a step of the job's timeline.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { shellQuote } from '../../executors/common/quote.js';
import type { BuildPayload } from '../../protocol/types.js';
import { CheckoutError, readyCheckout, sourcesVariables } from './checkout.js';
import { StageFailed } from './failure.js';
import { gitSourcesCommands } from './git-sources.js';
import { gitRemote } from './git-remote.js';
import { gitTlsOfJobVariables, writeGitTls } from './git-tls.js';
import type { JobSignal } from './job-signal.js';
import type { LogSections } from './log-sections.js';
import { notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import { announcedCommands, POST_HOOK, PRE_HOOK, sourcesHooks } from './sources-hooks.js';
import type { Executor, StageResult } from '../../executors/types.js';
import { jobUser, type ChainRun, type JobEnv, type NextStage, type ShellRun, type StageOptions, type StageRun } from './stage-run.js';
import { buildPath } from './stage-shell.js';
import { scriptSteps } from './timeline.js';

export { CheckoutError };

/**
 * Fetches the sources per the job's GIT_STRATEGY; throws StageFailed after the last attempt. With
 * `chain` (the build stage, and an executor that can chain them), the first attempt runs the build in
 * the same process when the sources are ready; the build's result is returned when it ran.
 */
export async function getSources(
  build: BuildPayload,
  services: JobServices,
  run: StageRun,
  job: JobSignal,
  env: JobEnv,
  shell: ShellRun,
  sections: LogSections,
  chain?: { run: ChainRun; next: NextStage },
): Promise<StageResult | undefined> {
  const { runner } = services;
  const { dirs, write, executor } = run;
  const { controls } = env;
  // With nothing to fetch there is nothing for a shell to do (GitLab Runner runs no hook then either).
  // Where every stage runs through the executor, the checkout is on its side (the custom executor's).
  const inDriver = executor.runsEveryStage === true;
  const projectDir = inDriver ? buildPath(executor, dirs.projectDir) : dirs.projectDir;
  if (controls.gitStrategy === 'none' || controls.gitStrategy === 'empty') {
    if (inDriver) return driverSkipsGit(executor, shell, controls.gitStrategy, projectDir, { echo: false, workDir: dirs.slotDir, variables: env.build, signal: job.signal }, job);
    services.onStage?.(build, 'get_sources');
    await sections.around('get_sources', async () => {
      if (controls.gitStrategy === 'none') write(notice('Skipping Git repository setup'));
      else {
        write(notice('Skipping Git repository setup and creating an empty build directory'));
        await rm(dirs.projectDir, { recursive: true, force: true });
      }
      await mkdir(dirs.projectDir, { recursive: true });
    });
    return undefined;
  }
  const hooks = sourcesHooks(build, runner);
  if (hooks.unknown.length > 0) write(warning(`WARNING: hooks ${hooks.unknown.join(', ')} are unknown to this runner (it runs ${PRE_HOOK} and ${POST_HOOK}); they do not run`));
  if (build.refspecs && build.refspecs.length > 0 && controls.cloneFlags.length > 0) {
    write(warning('WARNING: GIT_CLONE_EXTRA_FLAGS is not used: this job\'s sources are fetched into a new repository (git init and git fetch), as GitLab Runner does without FF_USE_GIT_NATIVE_CLONE'));
  }
  // Where get_sources runs on the host, the job's hooks run in the job's environment, around it.
  const inJob = executor.host !== undefined;
  const runAs = jobUser(services, executor);
  // get_sources runs on the host (executor.host), so git reads the TLS files at their host paths; in a
  // driver's environment, git reads the CA the job's CI_SERVER_TLS_CA_FILE puts there, as GitLab Runner's.
  const gitTls = inDriver ? undefined : await writeGitTls(runner.url, services.client.tls, dirs.stateDir, runAs);
  const driverTls = inDriver ? gitTlsOfJobVariables(runner.url, services.client.tls) : undefined;
  // The steps file is the daemon's (state dir), so not under a job user; EPOCHREALTIME is bash's.
  const stepFile = run.mark && !runAs && !inDriver && runner.shell === 'bash' ? join(dirs.stateDir, 'git-steps') : undefined;
  const remote = gitRemote(build, runner, env.host, controls.submoduleForceHttps);
  const safeDirectory = runner.safe_directory_checkout ?? executor.name !== 'shell';
  const gitCommands = gitSourcesCommands({
    build,
    projectDir,
    strategy: controls.gitStrategy,
    depth: controls.gitDepth,
    submodules: controls.submodules,
    checkout: controls.gitCheckout,
    cleanFlags: controls.cleanFlags,
    fetchFlags: controls.fetchFlags,
    cloneFlags: controls.cloneFlags,
    submodulePaths: controls.submodulePaths,
    submoduleDepth: controls.submoduleDepth,
    submoduleUpdateFlags: controls.submoduleUpdateFlags,
    lfs: !controls.lfsSkipSmudge,
    ...(remote.url ? { remoteUrl: remote.url } : {}),
    extraConfig: [...remote.config, ...(safeDirectory ? [['safe.directory', projectDir] as const] : [])],
    preScript: announcedCommands(inJob ? hooks.runnerPre : [...hooks.runnerPre, ...hooks.jobPre]),
    postScript: announcedCommands(inJob ? hooks.runnerPost : [...hooks.jobPost, ...hooks.runnerPost]),
    ...(gitTls ? { tls: gitTls.tls } : driverTls ? { tls: driverTls } : {}),
    ...(stepFile ? { stepFile } : {}),
  });
  // The runner's guardCheckout cannot reach the driver's side: a clone starts from an empty dir there.
  const sources = inDriver ? [`mkdir -p -- ${shellQuote(dirname(projectDir))}`, ...(controls.gitStrategy === 'clone' ? [`rm -rf -- ${shellQuote(projectDir)}`] : []), ...gitCommands] : gitCommands;
  // The job's hooks run where the job runs, the fetch on the host: one get_sources section holds them all.
  const hooked = inJob && (hooks.jobPre.length > 0 || hooks.jobPost.length > 0);
  const jobHook = async (stage: string, commands: string[], workDir: string): Promise<StageResult | undefined> => {
    if (!inJob || commands.length === 0) return undefined;
    await mkdir(dirs.projectDir, { recursive: true });
    // A pod that is still starting is waited for (it otherwise starts while the host fetches).
    if (stage === PRE_HOOK) await executor.ready?.(job.signal);
    const result = await shell(executor, stage, commands, { echo: true, workDir, variables: env.build, signal: job.signal, debug: controls.debugTrace, beforeSources: stage === PRE_HOOK, inSection: true });
    job.check();
    return result.exitCode === 0 ? undefined : result;
  };
  try {
    for (let attempt = 1; ; attempt += 1) {
      const began = performance.now();
      if (hooked) {
        services.onStage?.(build, 'get_sources');
        sections.open('get_sources');
      }
      let result: StageResult | undefined;
      let outcome: Awaited<ReturnType<ChainRun>> | undefined;
      let buildBegan: number | undefined;
      try {
        result = await jobHook(PRE_HOOK, hooks.jobPre, dirs.slotDir);
        if (!result) {
          if (!inDriver) await readyCheckout(build, dirs, controls.gitStrategy, runAs, write);
          const options = { echo: false, workDir: dirs.slotDir, variables: inDriver ? env.build : sourcesVariables(build, executor, env.host), signal: job.signal, untimed: true, ...(hooked ? { inSection: true as const } : {}) };
          // Chained on the first attempt only: the TLS files must be gone before the build, and a retry
          // is rare enough to take its own process.
          const chained = attempt === 1 && !gitTls ? chain : undefined;
          const buildBegins = (at: number): void => {
            buildBegan = at;
            chained?.next.began(at);
          };
          outcome = chained ? await chained.run('get_sources', sources, options, { ...chained.next, began: buildBegins }) : { first: await shell(executor.host ?? executor, 'get_sources', sources, options) };
          result = outcome.first.exitCode === 0 ? await jobHook(POST_HOOK, hooks.jobPost, dirs.projectDir) : outcome.first;
        }
      } finally {
        if (hooked) sections.close('get_sources');
      }
      const ended = performance.now();
      // The git commands first: the log lists steps as they end, and they ended within the stage.
      if (stepFile) await markGitSteps(run, stepFile, buildBegan ?? ended);
      run.mark?.('get_sources', began, { attempt }, buildBegan ?? ended);
      if (outcome?.second) {
        if (chain) run.mark?.(chain.next.stage, buildBegan ?? ended, undefined, ended);
        return outcome.second;
      }
      job.check();
      if (!result) return undefined;
      if (attempt >= controls.getSourcesAttempts) throw new StageFailed(`getting sources failed: exit status ${result.exitCode ?? result.signal}`, { reason: 'script_failure', ...(result.exitCode ? { exitCode: result.exitCode } : {}) });
      write(warning(`Getting sources failed (attempt ${attempt} of ${controls.getSourcesAttempts}); retrying...`));
    }
  } finally {
    await gitTls?.remove();
  }
}

/** The git commands the stage marked, as steps of the timeline; the file is gone afterwards. */
async function markGitSteps(run: StageRun, stepFile: string, ended: number): Promise<void> {
  const text = await readFile(stepFile, 'utf8').catch(() => '');
  await rm(stepFile, { force: true });
  for (const step of scriptSteps(text, ended)) run.mark?.(step.step, step.began, undefined, step.began + step.took);
}

/** GIT_STRATEGY none or empty where the driver holds the checkout: its project dir made (emptied) there. */
async function driverSkipsGit(executor: Executor, shell: ShellRun, strategy: 'none' | 'empty', projectDir: string, options: StageOptions, job: JobSignal): Promise<undefined> {
  const dir = shellQuote(projectDir);
  const lines =
    strategy === 'none'
      ? [`printf '\\033[32;1m%s\\033[0;m\\n' 'Skipping Git repository setup'`, `mkdir -p -- ${dir}`]
      : [`printf '\\033[32;1m%s\\033[0;m\\n' 'Skipping Git repository setup and creating an empty build directory'`, `rm -rf -- ${dir}`, `mkdir -p -- ${dir}`];
  const result = await shell(executor, 'get_sources', lines, options);
  job.check();
  if (result.exitCode !== 0) throw new StageFailed(`getting sources failed: exit status ${result.exitCode ?? result.signal}`, { reason: 'script_failure', ...(result.exitCode ? { exitCode: result.exitCode } : {}) });
  return undefined;
}
