/**
 * The jobs running now, as the metrics and the debug endpoints see them: GitLab Runner's
 * `gitlab_runner_jobs` gauge is counted from this table, `/debug/jobs/list` prints it in GitLab
 * Runner's line format (commands/builds_helper.go `ListJobsHandler`), `/debug/jobs` as JSON.
 */
import type { StageName } from '../../executors/common/stages.js';
import type { BuildPayload } from '../../protocol/types.js';
import { shortToken } from '../../util/short-token.js';
import { formatGoDuration } from '../../util/duration.js';
import type { RunnerConfig } from '../config/schema.js';

/** A running job as /debug/jobs shows it. */
export interface RunningJob {
  id: number;
  /** The entry's name. */
  runner: string;
  /** The entry's token, shortened as GitLab Runner labels it. */
  runnerShort: string;
  executor: string;
  /** GitLab Runner's stage name (the stage table's: prepare_executor, get_sources, step_script, …). */
  stage: string;
  started: string;
  traceBytes: number;
  /** The job's page: the project URL without credentials or `.git`, then `/-/jobs/<id>`. */
  url: string;
}

/** Bounded: a job id is a label of nothing, but the table itself must not grow without end. */
const MAX_TRACKED_JOBS = 10_000;

/**
 * GitLab Runner's `executor_stage` of a job in `stage`: docker's own names, else the abstract
 * executor's (`prepare` until the executor finishes).
 */
export function executorStage(executor: string, stage: string): string {
  if (executor !== 'docker') return 'prepare';
  return stage === 'prepare_executor' ? 'docker_prepare' : 'docker_run';
}

export class RunningJobs {
  private readonly jobs = new Map<number, RunningJob>();

  add(runner: Pick<RunnerConfig, 'name' | 'token' | 'executor'>, build: BuildPayload): void {
    if (this.jobs.size >= MAX_TRACKED_JOBS) return;
    this.jobs.set(build.id, {
      id: build.id,
      runner: runner.name,
      runnerShort: shortToken(runner.token),
      executor: runner.executor,
      stage: 'prepare_executor' satisfies StageName,
      started: new Date().toISOString(),
      traceBytes: 0,
      url: jobUrl(build),
    });
  }

  get(id: number): RunningJob | undefined {
    return this.jobs.get(id);
  }

  remove(id: number): RunningJob | undefined {
    const job = this.jobs.get(id);
    this.jobs.delete(id);
    return job;
  }

  list(): RunningJob[] {
    return [...this.jobs.values()];
  }

  /** GitLab Runner's `/debug/jobs/list` body (X-List-Version 2): one line per job. */
  listText(now = Date.now()): string {
    return this.list()
      .map((job) => `url=${job.url} state=running stage=${job.stage} executor_stage=${executorStage(job.executor, job.stage)} duration=${formatGoDuration(now - Date.parse(job.started))}\n`)
      .join('');
  }
}

/** `<project URL>/-/jobs/<id>`, from the repo URL without its credentials and `.git`. */
export function jobUrl(build: Pick<BuildPayload, 'id' | 'repo_url'>): string {
  let base = build.repo_url;
  try {
    const url = new URL(build.repo_url);
    url.username = '';
    url.password = '';
    base = url.toString();
  } catch {
    // Not a URL: used as it is.
  }
  return `${base.replace(/\/+$/, '').replace(/\.git$/, '')}/-/jobs/${build.id}`;
}
