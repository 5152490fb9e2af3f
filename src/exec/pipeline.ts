/**
 * The server side of `exec`: the in-process reference server serving the snapshot, and the pipeline
 * created on it through `createPipeline` like any client's, with `exec`'s job selection applied to the
 * jobs the engine produced. An invalid file becomes `ExecPipelineError` listing every problem.
 */
import { CiRunnerError, hasCode } from '../util/errors.js';
import type { Logger } from '../log/index.js';
import type { PipelineSpec } from '../pipeline/spec.js';
import { createReferenceServer, type PipelineView, type ReferenceServer } from '../server/index.js';

export { preloadPipelineModules as preloadServerModules } from '../server/index.js';
import { selectJobs, type JobSelection } from './select.js';
import { fileSafe } from './keep.js';
import type { Snapshot } from './snapshot.js';

/**
 * Builds that wait for nothing long-poll the server, so a job that becomes pending starts at once
 * instead of at the runner's next check (exec's start-up time is what users feel).
 */
const LONG_POLL_MS = 30_000;

/** The pipeline file cannot run: exit 2, with every problem (each naming its job and key). */
export class ExecPipelineError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(
    readonly file: string,
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super('PIPELINE_INVALID', `${file} is not a valid pipeline:\n${problems.map((p) => `  - ${p}`).join('\n')}`, options);
  }
}

/** `local/<dir name>`: the project's name on the server (CI_PROJECT_PATH), valid as the server wants it. */
export function projectName(topLevel: string): string {
  const base = fileSafe(topLevel.split('/').pop() ?? 'project').replace(/[^A-Za-z0-9_.-]/g, '-').replace(/\.git$/, '');
  return `local/${base === '' ? 'project' : base}`;
}

export async function startServer(snapshot: Snapshot, logger: Logger): Promise<{ server: ReferenceServer; project: string }> {
  const project = projectName(snapshot.topLevel);
  const server = await createReferenceServer({ projects: [{ name: project, path: snapshot.repoPath }], longPollMs: LONG_POLL_MS, logger });
  return { server, project };
}

export interface CreateOptions {
  server: ReferenceServer;
  project: string;
  snapshot: Snapshot;
  /** The pipeline file as the user named it, for messages. */
  file: string;
  config: string;
  variables: Record<string, string>;
  selection: JobSelection;
}

/** Creates the pipeline; resolves with it and the jobs it runs (after rules and selection). */
export async function createExecPipeline(options: CreateOptions): Promise<{ pipeline: PipelineView; spec: PipelineSpec }> {
  let spec: PipelineSpec | undefined;
  try {
    const pipeline = await options.server.createPipeline({
      project: options.project,
      ref: options.snapshot.ref,
      defaultBranch: options.snapshot.defaultBranch,
      commit: { sha: options.snapshot.sha, tag: options.snapshot.tag, beforeSha: options.snapshot.beforeSha, message: options.snapshot.message },
      config: options.config,
      variables: options.variables,
      filterJobs: (parsed) => {
        spec = selectJobs(parsed, options.selection);
        return spec;
      },
    });
    if (!spec) throw new CiRunnerError('EXEC_INTERNAL', 'the server created the pipeline without showing its jobs');
    return { pipeline, spec };
  } catch (error) {
    if (hasCode(error, 'PIPELINE_INVALID')) throw new ExecPipelineError(options.file, problemsOf(error), { cause: error });
    throw error;
  }
}

/**
 * Every problem of a `PipelineConfigError`: its `problems` (`{ message, job?, key? }` each) when the
 * engine collects them, else its message.
 */
export function problemsOf(error: unknown): string[] {
  const problems = (error as { problems?: unknown }).problems;
  if (Array.isArray(problems) && problems.length > 0) {
    return problems.map((p: unknown) => {
      const message = (p as { message?: unknown } | null)?.message;
      return typeof message === 'string' ? message : String(p);
    });
  }
  return [(error as Error).message];
}
