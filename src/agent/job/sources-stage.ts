/**
 * 2. get_sources, on the host through the executor's host shell (the executor itself for shell), with
 * its retries. Under `--debug` each git command is a step of the job's timeline.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { BuildPayload } from '../../protocol/types.js';
import { CheckoutError, readyCheckout, sourcesVariables } from './checkout.js';
import { StageFailed } from './failure.js';
import { gitSourcesCommands } from './git-sources.js';
import { writeGitTls } from './git-tls.js';
import type { JobSignal } from './job-signal.js';
import type { LogSections } from './log-sections.js';
import { notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import type { StageResult } from '../../executors/types.js';
import { jobUser, type ChainRun, type JobEnv, type NextStage, type ShellRun, type StageRun } from './stage-run.js';
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
  // With nothing to fetch and no pre-clone script there is nothing for a shell to do.
  if (controls.gitStrategy === 'none' && !runner.pre_clone_script) {
    services.onStage?.(build, 'get_sources');
    await sections.around('get_sources', async () => {
      write(notice('Skipping Git repository setup'));
      await mkdir(dirs.projectDir, { recursive: true });
    });
    return undefined;
  }
  const runAs = jobUser(services, executor);
  // get_sources runs on the host (executor.host), so git reads the TLS files at their host paths.
  const gitTls = await writeGitTls(runner.url, services.client.tls, dirs.stateDir, runAs);
  // The steps file is the daemon's (state dir), so not under a job user; EPOCHREALTIME is bash's.
  const stepFile = run.mark && !runAs && runner.shell === 'bash' ? join(dirs.stateDir, 'git-steps') : undefined;
  const sources = gitSourcesCommands({
    build,
    projectDir: dirs.projectDir,
    strategy: controls.gitStrategy,
    depth: controls.gitDepth,
    submodules: controls.submodules,
    ...(runner.pre_clone_script ? { preCloneScript: runner.pre_clone_script } : {}),
    ...(gitTls ? { tls: gitTls.tls } : {}),
    ...(stepFile ? { stepFile } : {}),
  });
  try {
    for (let attempt = 1; ; attempt += 1) {
      await readyCheckout(build, dirs, controls.gitStrategy, runAs, write);
      const began = performance.now();
      const options = { echo: false, workDir: dirs.slotDir, variables: sourcesVariables(build, executor, env.host), signal: job.signal, untimed: true };
      // Chained on the first attempt only: the TLS files must be gone before the build, and a retry
      // is rare enough to take its own process.
      const chained = attempt === 1 && !gitTls ? chain : undefined;
      let buildBegan: number | undefined;
      const buildBegins = (at: number): void => {
        buildBegan = at;
        chained?.next.began(at);
      };
      const outcome = chained ? await chained.run('get_sources', sources, options, { ...chained.next, began: buildBegins }) : { first: await shell(executor.host ?? executor, 'get_sources', sources, options) };
      const ended = performance.now();
      const result = outcome.first;
      // The git commands first: the log lists steps as they end, and they ended within the stage.
      if (stepFile) await markGitSteps(run, stepFile, buildBegan ?? ended);
      run.mark?.('get_sources', began, { attempt }, buildBegan ?? ended);
      if (outcome.second) {
        if (chained) run.mark?.(chained.next.stage, buildBegan ?? ended, undefined, ended);
        return outcome.second;
      }
      job.check();
      if (result.exitCode === 0) return undefined;
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
