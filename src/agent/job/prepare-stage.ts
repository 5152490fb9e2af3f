/**
 * The stages before the sources: prepare_executor (the executor's own preparation: an image pulled,
 * services started, a pod made) and prepare_script (where the job runs), each in its log section;
 * and the job's variables and controls, which both need.
 */
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Executor } from '../../executors/types.js';
import type { BuildPayload } from '../../protocol/types.js';
import { timed } from '../../util/timeline.js';
import { readControls } from './control-variables.js';
import { featureFlagVariables } from '../config/feature-flags.js';
import { materializeFileVariables } from './file-variables.js';
import type { JobSignal } from './job-signal.js';
import { giveFilesToUser } from './job-user.js';
import type { LogSections } from './log-sections.js';
import { notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import { jobUser, type JobEnv, type StageRun } from './stage-run.js';
import { buildPath } from './stage-shell.js';
import { collectVariables, expandVariables } from './variables.js';

/** The job's variables and controls, then prepare_executor and prepare_script. */
export async function prepare(build: BuildPayload, services: JobServices, run: StageRun, job: JobSignal, sections: LogSections): Promise<JobEnv> {
  const { runner } = services;
  const { dirs, executor, write } = run;
  const collect = (projectDir: string, buildsDir: string) =>
    expandVariables(
      collectVariables({
        build,
        environment: runner.environment,
        projectDir,
        buildsDir,
        runnerName: runner.name,
        runnerToken: runner.token,
        featureFlags: featureFlagVariables(run.flags),
        ...(services.client.tls.ca ? { tlsCa: services.client.tls.ca } : {}),
      }),
    );
  const hostList = collect(dirs.projectDir, runner.builds_dir);
  const controls = readControls(hostList, build.allow_git_fetch, build.git_depth ?? 0);
  const host = await materializeFileVariables(hostList, dirs.stateDir);
  const runAs = jobUser(services, executor);
  if (runAs) await giveFilesToUser(runAs, host.filter((v) => v.value === join(dirs.stateDir, v.key)).map((v) => v.value));
  await mkdir(dirs.slotDir, { recursive: true });
  job.check();
  services.onStage?.(build, 'prepare_executor');
  await timed(run.mark, 'prepare_executor', () => sections.around('prepare_executor', () => prepareExecutor(build, run, job, host, runner.shell)));
  services.onStage?.(build, 'prepare_script');
  sections.around('prepare_script', async () => write(`Running on ${hostname()}...\n`));
  // The build stages may see other paths (docker: /builds/…), known once the executor is prepared.
  const buildVariables = executor.buildPath
    ? await materializeFileVariables(collect(buildPath(executor, dirs.projectDir), buildPath(executor, dirs.slotDir)), dirs.stateDir, (path) => buildPath(executor, path))
    : host;
  run.logger.debug({ ms: Date.now() - run.started }, 'prepared');
  return { controls, host, build: buildVariables };
}

/** The executor's own preparation (docker: image, services); a stop meanwhile is reported as the stop. */
async function prepareExecutor(build: BuildPayload, run: StageRun, job: JobSignal, host: JobEnv['host'], shell: string): Promise<void> {
  const { dirs, executor, write } = run;
  write(notice(`Using ${executorTitle(executor, shell)} executor...`));
  if (executor.containment) write(`Process containment: ${executor.containment}\n`);
  if (!executor.prepare) return;
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

/** `Shell (bash)`, `Docker`, `Kubernetes`: as GitLab Runner names its executors in this line. */
function executorTitle(executor: Executor, shell: string): string {
  const title = `${executor.name.charAt(0).toUpperCase()}${executor.name.slice(1)}`;
  return executor.name === 'shell' ? `${title} (${shell})` : title;
}
