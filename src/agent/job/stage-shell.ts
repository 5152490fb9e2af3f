/**
 * How the stage sequence (stages.ts) runs a stage's commands on an executor: the request built from
 * the job's dirs and trace, the stage's log section around it (log-sections.ts) with its output in a
 * trace stream of its own, the stage's step on the timeline, the job log's word when a stage had to
 * be killed; and the chain of get_sources and the first step in one process where the executor can
 * run one (Executor.runChained) and nothing has to happen between them.
 */
import { stageSpec, type StageName } from '../../executors/common/stages.js';
import type { ChainedStages, Executor, StageRequest, StageResult } from '../../executors/types.js';
import type { BuildPayload } from '../../protocol/types.js';
import { gitlabSectionName } from '../../trace/index.js';
import { timed } from '../../util/timeline.js';
import { hasArtifactsToDownload } from './artifact-stages.js';
import type { LogSections } from './log-sections.js';
import { notice, warning } from './messages.js';
import type { JobServices } from './services.js';
import { jobUser, type ChainRun, type ShellRun, type StageOptions, type StageRun } from './stage-run.js';

/**
 * The job's ShellRun and, where get_sources and the build may share a process, its ChainRun: an
 * executor that can chain them (no host shell, no pod to wait for, no job user) and nothing to do
 * on the runner between them (no artifacts to download, no cache to restore).
 */
export function stageShells(build: BuildPayload, services: JobServices, run: StageRun, sections: LogSections): { shell: ShellRun; chain?: ChainRun } {
  const { executor, dirs, write } = run;
  const script = (target: Executor, stage: string, commands: string[], options: StageOptions): ChainedStages['second'] => ({
    stage,
    commands,
    echoCommands: options.echo,
    variables: options.variables,
    workDir: target === executor ? buildPath(executor, options.workDir) : options.workDir,
    scriptDir: dirs.stateDir,
    ...(options.debug ? { debugTrace: true } : {}),
    ...(scriptSections(stage, options) ? { scriptSections: scriptSections(stage, options) } : {}),
    ...(options.beforeSources ? { beforeSources: true } : {}),
  });
  const scriptSections = (stage: string, options: StageOptions): string | undefined =>
    options.scriptSections && options.echo && sections.markers && !options.inSection ? stageSpec(stage as StageName).commandSections : undefined;
  const request = (target: Executor, stage: string, commands: string[], options: StageOptions, output: (chunk: Uint8Array) => void): StageRequest => ({
    ...script(target, stage, commands, options),
    ...(run.mark ? { mark: run.mark } : {}),
    ...(options.attempts !== undefined && options.attempts > 1 ? { attempts: options.attempts } : {}),
    output,
    signal: options.signal,
  });
  const killed = (stage: string, result: StageResult | undefined): void => {
    if (result?.killedAfterMs !== undefined) write(warning(`WARNING: ${stage} did not stop within ${result.killedAfterMs / 1000} s of SIGTERM; it was killed (SIGKILL)`));
  };
  /** Closes what the stage's output left open and then the stage's own section (`own` may be it). */
  const close = (stage: StageName, left: string[]): void => {
    const own = gitlabSectionName(stage);
    sections.close(stage, left.filter((name) => name !== own));
  };
  const shell: ShellRun = async (target: Executor, stage: string, commands: string[], options: StageOptions) => {
    // A part of a stage runs in the section its caller opened: only what its output left open is closed.
    const own = options.inSection ? undefined : (stage as StageName);
    if (own) {
      services.onStage?.(build, own);
      sections.open(own);
    }
    if (options.notice) write(notice(options.notice));
    const output = run.output();
    let result: StageResult;
    try {
      const stageRequest = request(target, stage, commands, options, output.write);
      result = await (options.untimed ? target.runStage(stageRequest) : timed(run.mark, stage, () => target.runStage(stageRequest)));
    } finally {
      const left = output.end();
      if (own) close(own, left);
      else sections.closeLeft(left);
    }
    killed(stage, result);
    return result;
  };
  const runChained = executor.runChained?.bind(executor);
  if (!runChained || executor.host || executor.ready || jobUser(services, executor) || hasArtifactsToDownload(build) || build.options.cache !== undefined) return { shell };
  const chain: ChainRun = async (stage, commands, options, next) => {
    services.onStage?.(build, stage);
    const secondStage = next.stage;
    const second = script(executor, secondStage, next.commands, next.options);
    sections.open(stage);
    const output = run.output();
    let began = false;
    let result: Awaited<ReturnType<ChainRun>>;
    try {
      result = await runChained({
        first: request(executor, stage, commands, options, output.write),
        second,
        between: (time) => `${sections.closing(stage, [], time)}${sections.opening(secondStage, time)}`,
        began: (at) => {
          began = true;
          services.onStage?.(build, second.stage);
          next.began(at);
        },
      });
    } finally {
      close(began ? secondStage : stage, output.end());
    }
    killed(result.second ? second.stage : stage, result.second ?? result.first);
    return result;
  };
  return { shell, chain };
}

export function buildPath(executor: Executor, hostPath: string): string {
  return executor.buildPath ? executor.buildPath(hostPath) : hostPath;
}
