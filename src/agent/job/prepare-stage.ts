/**
 * The stages before the sources: prepare_executor (the executor's own preparation: an image pulled,
 * services started, a pod made) and prepare_script (where the job runs), each in its log section;
 * and the job's variables and controls, which both need. An executor that runs every stage (custom)
 * says itself what it is (its driver's line), and its prepare_script is a script of its own
 * (driver-stages.ts).
 */
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { fileVariablePaths } from '../../executors/common/file-variables.js';
import type { Executor, ExportedVariable } from '../../executors/types.js';
import type { BuildPayload } from '../../protocol/types.js';
import { shortList } from '../../trace/index.js';
import { timed } from '../../util/timeline.js';
import type { RunnerConfig } from '../config/schema.js';
import { featureFlagVariables } from '../config/feature-flags.js';
import { readControls } from './control-variables.js';
import { refuseDebugTrace } from './debug-trace.js';
import { invalidFileVariables, materializeFileVariables } from './file-variables.js';
import type { JobSignal } from './job-signal.js';
import { giveFilesToUser } from './job-user.js';
import type { LogSections } from './log-sections.js';
import { notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import { jobUser, type JobEnv, type StageRun } from './stage-run.js';
import { buildPath } from './stage-shell.js';
import { collectVariables, expandVariables, variableContext } from './variables.js';

/** The job's variables and controls, then prepare_executor and prepare_script. */
export async function prepare(build: BuildPayload, services: JobServices, run: StageRun, job: JobSignal, sections: LogSections): Promise<JobEnv> {
  const { runner } = services;
  const { dirs, executor, write } = run;
  const collect = (projectDir: string, buildsDir: string) =>
    expandVariables(collectVariables({ ...variableContext(build, services, run), projectDir, buildsDir, featureFlags: featureFlagVariables(run.flags) }));
  const hostList = collect(dirs.projectDir, runner.builds_dir);
  const controls = refuseDebugTrace(readControls(hostList, { allowGitFetch: build.allow_git_fetch, defaultDepth: build.git_depth ?? 0, setByJob: setByJob(build, runner) }), runner, hostList, write);
  for (const line of controls.warnings) write(warning(`WARNING: ${line}`));
  const invalid = invalidFileVariables(hostList);
  if (invalid.length > 0) write(warning(`WARNING: file variables skipped, their names are not GitLab's (letters, digits and _ only): ${shortList(invalid)}`));
  const host = await materializeFileVariables(hostList, dirs.stateDir);
  const runAs = jobUser(services, executor);
  if (runAs) await giveFilesToUser(runAs, fileVariablePaths(host));
  await mkdir(dirs.slotDir, { recursive: true });
  job.check();
  // The build stages may see other paths (docker: /builds/…), known once the executor is prepared.
  let buildList: Promise<ExportedVariable[]> | undefined;
  const buildVariables = (): Promise<ExportedVariable[]> =>
    (buildList ??= executor.buildPath ? materializeFileVariables(collect(buildPath(executor, dirs.projectDir), buildPath(executor, dirs.slotDir)), dirs.stateDir, (path) => buildPath(executor, path)) : Promise.resolve(host));
  services.onStage?.(build, 'prepare_executor');
  await timed(run.mark, 'prepare_executor', () => sections.around('prepare_executor', () => prepareExecutor(build, run, job, host, buildVariables, runner.shell)));
  if (!executor.runsEveryStage) {
    services.onStage?.(build, 'prepare_script');
    await sections.around('prepare_script', async () => write(`Running on ${hostname()}...\n`));
  }
  const inStages = await buildVariables();
  run.logger.debug({ ms: Date.now() - run.started }, 'prepared');
  return { controls, host, build: inStages };
}

/** The executor's own preparation (docker: image, services); a stop meanwhile is reported as the stop. */
async function prepareExecutor(build: BuildPayload, run: StageRun, job: JobSignal, host: JobEnv['host'], buildVariables: () => Promise<ExportedVariable[]>, shell: string): Promise<void> {
  const { dirs, executor, write } = run;
  if (!executor.runsEveryStage) write(notice(`Using ${executorTitle(executor, shell)} executor...`));
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
    buildVariables,
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

/** The variables the job's payload and the runner's `environment` set (the predefined ones are the runner's own). */
function setByJob(build: BuildPayload, runner: RunnerConfig): Set<string> {
  return new Set([...build.variables.map((v) => v.key), ...runner.environment.map((entry) => entry.slice(0, entry.indexOf('=')))]);
}
