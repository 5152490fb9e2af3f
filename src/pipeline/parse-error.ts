import { CiRunnerError } from '../util/errors.js';

/**
 * A `.gitlab-ci.yml` the reference server cannot run. The message names the job and the key
 * (`jobs:test:unit artifacts:paths must be a list of strings`) so the author knows what to fix;
 * `job`/`key` carry the same for callers that render errors themselves.
 */
export class PipelineConfigError extends CiRunnerError {
  readonly job: string | undefined;
  readonly key: string | undefined;
  /** Every problem found (see `ConfigErrors`): this one alone unless several were collected. */
  readonly problems: ConfigProblem[];

  constructor(message: string, where: { job?: string; key?: string } = {}, options?: { cause?: unknown }) {
    super('PIPELINE_INVALID', message, options);
    this.job = where.job;
    this.key = where.key;
    this.problems = [{ message, ...(where.job === undefined ? {} : { job: where.job }), ...(where.key === undefined ? {} : { key: where.key }) }];
  }
}

/**
 * Where a value sits in the config, used to build messages: `jobs:<name> <key>` for a job's key, the
 * bare key for a global one.
 */
export interface ConfigPath {
  job?: string;
  key: string;
}

/** `jobs:build artifacts:paths` or `cache:paths`. */
export function describePath(path: ConfigPath): string {
  return path.job === undefined ? path.key : `jobs:${path.job} ${path.key}`;
}

/** GitLab's way of naming a place in messages: `jobs:build:artifacts:reports`, `workflow:rules:0`. */
export function gitlabPath(path: ConfigPath): string {
  const key = path.key === 'config' ? '' : path.key;
  if (path.job === undefined) return key === '' ? 'root' : key;
  return key === '' ? `jobs:${path.job}` : `jobs:${path.job}:${key}`;
}

/** Throws a `PipelineConfigError` saying that the value at `path` `problem` (e.g. "must be a boolean"). */
export function configError(path: ConfigPath, problem: string): never {
  throw new PipelineConfigError(`${describePath(path)} ${problem}`, path);
}

/** The same path one level deeper: `artifacts` → `artifacts:paths`. */
export function childPath(path: ConfigPath, key: string): ConfigPath {
  return { ...path, key: `${path.key}:${key}` };
}

/** One problem of a refused pipeline, as `exec` and the admin API list them. */
export interface ConfigProblem {
  message: string;
  job?: string;
  key?: string;
}

/**
 * Every problem of a pipeline, not only the first: checks run inside `attempt` and their refusals
 * are collected, so an author fixes the whole file in one round. `throwIfAny` raises one
 * `PipelineConfigError` whose message lists them all and whose `problems` carries each.
 */
export class ConfigErrors {
  readonly problems: ConfigProblem[] = [];

  /** Runs `check`; a `PipelineConfigError` it throws is recorded and `undefined` returned instead. */
  attempt<T>(check: () => T): T | undefined {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof PipelineConfigError)) throw error;
      this.add(error);
      return undefined;
    }
  }

  /** Records the error's problems; one already recorded (a shared base reached twice) is not repeated. */
  add(error: PipelineConfigError): void {
    for (const problem of error.problems) {
      if (!this.problems.some((known) => known.message === problem.message)) this.problems.push(problem);
    }
  }

  throwIfAny(): void {
    if (this.problems.length === 0) return;
    throw combinedError(this.problems);
  }
}

/** One problem keeps its own message; several become a count and one line each. */
function combinedError(problems: ConfigProblem[]): PipelineConfigError {
  const [first] = problems;
  if (first === undefined) throw new Error('combinedError needs at least one problem');
  const message =
    problems.length === 1 ? first.message : `the pipeline has ${problems.length} problems:\n${problems.map((p) => `- ${p.message}`).join('\n')}`;
  const error = new PipelineConfigError(message, first);
  error.problems.splice(0, error.problems.length, ...problems);
  return error;
}
