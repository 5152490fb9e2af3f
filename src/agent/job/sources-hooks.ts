/**
 * The scripts around get_sources, as GitLab Runner 19 runs them: before the clone or fetch the
 * runner's `pre_get_sources_script` (config.toml; `pre_clone_script` is its name before GitLab
 * Runner 17) then the job's `hooks:pre_get_sources_script`; after the submodules the job's
 * `post_get_sources_script` hook then the runner's `post_get_sources_script`. None of them runs for
 * GIT_STRATEGY `none` or `empty`.
 *
 * Where they run differs from GitLab Runner for docker and kubernetes: there get_sources is the
 * runner's own git on the host, so only the runner's scripts (written by its admin) run in it. The
 * job's hooks — written by whoever pushes — run in the job's own container (docker: a container of
 * the job's image on the project dir; kubernetes: the pod's build container), before the runner
 * rebuilds and fetches the checkout and after it; git settings they make apply to the job's git, not
 * to the runner's fetch. With the shell executor everything runs in the get_sources script, as the
 * job user when there is one, as GitLab Runner does.
 */
import type { BuildPayload } from '../../protocol/types.js';
import type { RunnerConfig } from '../config/schema.js';
import { notice } from './git-fetch.js';

export const PRE_HOOK = 'pre_get_sources_script';
export const POST_HOOK = 'post_get_sources_script';
const KNOWN_HOOKS: ReadonlySet<string> = new Set([PRE_HOOK, POST_HOOK]);

export interface SourcesHooks {
  /** The runner's own scripts (run where get_sources runs). */
  runnerPre: string[];
  runnerPost: string[];
  /** The job's hooks (run where the job's scripts run). */
  jobPre: string[];
  jobPost: string[];
  /** Hooks the payload names that no runner knows, for a warning. */
  unknown: string[];
}

/** The scripts around get_sources for `build` on `runner`. */
export function sourcesHooks(build: BuildPayload, runner: Pick<RunnerConfig, 'pre_get_sources_script' | 'pre_clone_script' | 'post_get_sources_script'>): SourcesHooks {
  const job = (name: string): string[] => (build.hooks ?? []).filter((hook) => hook.name === name).flatMap((hook) => hook.script);
  const pre = runner.pre_get_sources_script ?? runner.pre_clone_script;
  return {
    runnerPre: pre ? [pre] : [],
    runnerPost: runner.post_get_sources_script ? [runner.post_get_sources_script] : [],
    jobPre: job(PRE_HOOK),
    jobPost: job(POST_HOOK),
    unknown: [...new Set((build.hooks ?? []).map((hook) => hook.name).filter((name) => !KNOWN_HOOKS.has(name)))],
  };
}

/**
 * `commands` as lines of the unechoed get_sources script, each announced as GitLab Runner announces
 * it (`$ command`; a multi-line one by its first line) and run as it is.
 */
export function announcedCommands(commands: readonly string[]): string[] {
  return commands.flatMap((raw) => {
    const command = raw.trim();
    if (command === '') return [];
    const [first] = command.split('\n');
    return [notice(first === command ? `$ ${command}` : `$ ${first} # collapsed multi-line command`), command];
  });
}
