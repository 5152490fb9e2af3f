/**
 * How the stage sequence (stages.ts) runs a stage's commands on an executor: the request built from
 * the job's dirs and trace, the stage's step on the timeline, the job log's word when a stage had to
 * be killed; and the chain of get_sources and the build stage in one process where the executor can
 * run one (Executor.runChained) and nothing has to happen between them.
 */
import type { ChainedStages, Executor, StageRequest, StageResult } from '../../executors/types.js';
import type { BuildPayload } from '../../protocol/types.js';
import { timed } from '../../util/timeline.js';
import { hasArtifactsToDownload } from './artifact-stages.js';
import { warning } from './messages.js';
import type { JobServices } from './services.js';
import { jobUser, type ChainRun, type ShellRun, type StageOptions, type StageRun } from './stage-run.js';

/**
 * The job's ShellRun and, where get_sources and the build may share a process, its ChainRun: an
 * executor that can chain them (no host shell, no pod to wait for, no job user) and nothing to do
 * on the runner between them (no artifacts to download, no cache to restore).
 */
export function stageShells(build: BuildPayload, services: JobServices, run: StageRun): { shell: ShellRun; chain?: ChainRun } {
  const { executor, dirs, write } = run;
  const script = (target: Executor, stage: string, commands: string[], options: StageOptions): ChainedStages['second'] => ({
    stage,
    commands,
    echoCommands: options.echo,
    variables: options.variables,
    workDir: target === executor ? buildPath(executor, options.workDir) : options.workDir,
    scriptDir: dirs.stateDir,
    ...(options.debug ? { debugTrace: true } : {}),
    ...(options.beforeSources ? { beforeSources: true } : {}),
  });
  const request = (target: Executor, stage: string, commands: string[], options: StageOptions): StageRequest => ({
    ...script(target, stage, commands, options),
    ...(run.mark ? { mark: run.mark } : {}),
    output: (chunk) => write(chunk),
    signal: options.signal,
  });
  const killed = (stage: string, result: StageResult | undefined): void => {
    if (result?.killedAfterMs !== undefined) write(warning(`WARNING: ${stage} did not stop within ${result.killedAfterMs / 1000} s of SIGTERM; it was killed (SIGKILL)`));
  };
  const shell: ShellRun = async (target, stage, commands, options) => {
    services.onStage?.(build, stage);
    const stageRequest = request(target, stage, commands, options);
    const result = await (options.untimed ? target.runStage(stageRequest) : timed(run.mark, stage, () => target.runStage(stageRequest)));
    killed(stage, result);
    return result;
  };
  const runChained = executor.runChained?.bind(executor);
  if (!runChained || executor.host || executor.ready || jobUser(services, executor) || hasArtifactsToDownload(build) || build.options.cache !== undefined) return { shell };
  const chain: ChainRun = async (stage, commands, options, next) => {
    services.onStage?.(build, stage);
    const second = script(executor, 'build_script', next.commands, next.options);
    const result = await runChained({
      first: request(executor, stage, commands, options),
      second,
      between: next.between,
      began: (at) => {
        services.onStage?.(build, second.stage);
        next.began(at);
      },
    });
    killed(result.second ? second.stage : stage, result.second ?? result.first);
    return result;
  };
  return { shell, chain };
}

export function buildPath(executor: Executor, hostPath: string): string {
  return executor.buildPath ? executor.buildPath(hostPath) : hostPath;
}
