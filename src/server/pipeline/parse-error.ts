import { CiRunnerError } from '../../errors.js';

/**
 * A `.gitlab-ci.yml` the reference server cannot run. The message names the job and the key
 * (`jobs:test:unit artifacts:paths must be a list of strings`) so the author knows what to fix;
 * `job`/`key` carry the same for callers that render errors themselves.
 */
export class PipelineConfigError extends CiRunnerError {
  readonly job: string | undefined;
  readonly key: string | undefined;

  constructor(message: string, where: { job?: string; key?: string } = {}, options?: { cause?: unknown }) {
    super('PIPELINE_INVALID', message, options);
    this.job = where.job;
    this.key = where.key;
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

/** Throws a `PipelineConfigError` saying that the value at `path` `problem` (e.g. "must be a boolean"). */
export function configError(path: ConfigPath, problem: string): never {
  throw new PipelineConfigError(`${describePath(path)} ${problem}`, path);
}

/** The same path one level deeper: `artifacts` → `artifacts:paths`. */
export function childPath(path: ConfigPath, key: string): ConfigPath {
  return { ...path, key: `${path.key}:${key}` };
}
