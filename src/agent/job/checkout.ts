/**
 * get_sources' side on the runner: the project dir made ready for git (checkout-guard.ts) and handed
 * to the job user, and the variables the stage may see.
 */
import { mkdir } from 'node:fs/promises';
import { CiRunnerError } from '../../util/errors.js';
import type { Executor, ExportedVariable } from '../../executors/types.js';
import { guardCheckout } from '../../git/checkout-guard.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { RunAs } from '../../executors/run-as.js';
import { redactUrl, type JobDirs } from './build-dir.js';
import type { GitStrategy } from './git-sources.js';
import { giveProjectToUser, takeProject } from './job-user.js';
import { warning } from './messages.js';

/** The project dir could not be made ready; the message is the job's failure reason. */
export class CheckoutError extends CiRunnerError {}

/**
 * The project dir as get_sources expects it: for git, the previous checkout with its `.git` rebuilt
 * by the runner, or an empty dir (guardCheckout); the job user's when there is one, and the daemon's
 * (closed to it) while the guard works.
 */
export async function readyCheckout(build: BuildPayload, dirs: JobDirs, strategy: GitStrategy, runAs: RunAs | undefined, write: (chunk: string) => void): Promise<void> {
  if (runAs) {
    await takeProject(dirs.projectDir, runAs).catch((error: unknown) => {
      throw new CheckoutError('CHECKOUT_UNUSABLE', (error as Error).message, { cause: error });
    });
  }
  if (strategy === 'none') await mkdir(dirs.projectDir, { recursive: true });
  else {
    const owner = runAs ? { owner: { uid: runAs.uid, gid: runAs.gid } } : {};
    const guarded = await guardCheckout(dirs.projectDir, { originUrl: redactUrl(build.repo_url), sha: build.sha, fresh: strategy === 'clone', ...owner }).catch((error: unknown) => {
      throw new CheckoutError('CHECKOUT_UNUSABLE', `preparing the checkout in ${dirs.projectDir} failed: ${(error as Error).message}; remove that directory`, { cause: error });
    });
    if (guarded.discarded) write(warning(`WARNING: the checkout a previous job left was removed (${guarded.discarded}); cloning afresh`));
  }
  if (runAs) await giveProjectToUser(runAs, dirs.projectDir, false);
}

/**
 * What get_sources exports. Where it runs as the job does (the shell executor) the job's variables;
 * where it runs on the runner's side for a job that runs elsewhere (docker: on the host, as the
 * daemon's user), only the runner's own (its `environment` and the predefined ones): a job's
 * `variables:` could otherwise set PATH, LD_PRELOAD, GIT_EXEC_PATH, GIT_CONFIG_PARAMETERS or
 * GIT_WORK_TREE for the runner's git. The control variables (GIT_STRATEGY, …) were read already.
 */
export function sourcesVariables(build: BuildPayload, executor: Executor, host: ExportedVariable[]): ExportedVariable[] {
  if (!executor.host) return host;
  const fromJob = new Set(build.variables.map((v) => v.key));
  return host.filter((v) => !fromJob.has(v.key));
}
