/**
 * The control variables the runner reads from a job's variables (docs/protocol-v1.md §10.6). A value the
 * runner cannot honour fails the job with a message saying which variable and what it accepts.
 */
import type { GitStrategy, SubmoduleStrategy } from './git-sources.js';
import { isTruthy, variableValue, type JobVariable } from './variables.js';

/** A control variable the runner cannot honour; its message ends the trace as the failure reason. */
export class JobSetupError extends Error {}

export interface JobControls {
  gitStrategy: GitStrategy;
  gitDepth: number;
  submodules: SubmoduleStrategy;
  getSourcesAttempts: number;
  artifactDownloadAttempts: number;
  restoreCacheAttempts: number;
  debugTrace: boolean;
}

function attempts(vars: readonly JobVariable[], key: string): number {
  const raw = variableValue(vars, key)?.trim();
  if (raw === undefined || raw === '' || !/^-?\d+$/.test(raw)) return 1;
  const n = Number(raw);
  if (n < 1 || n > 10) throw new JobSetupError(`${key} is ${raw}; it must be between 1 and 10`);
  return n;
}

/**
 * Reads the control variables; throws JobSetupError for values outside what they accept.
 * `defaultDepth` is the server's depth (v4's `git_info.depth`) for when GIT_DEPTH is not set.
 */
export function readControls(vars: readonly JobVariable[], allowGitFetch: boolean, defaultDepth = 0): JobControls {
  const strategy = (variableValue(vars, 'GIT_STRATEGY') ?? '').trim();
  if (strategy !== '' && strategy !== 'clone' && strategy !== 'fetch' && strategy !== 'none') {
    throw new JobSetupError(`GIT_STRATEGY is "${strategy}"; use clone, fetch or none`);
  }
  const submodules = (variableValue(vars, 'GIT_SUBMODULE_STRATEGY') ?? '').trim() || 'none';
  if (submodules !== 'none' && submodules !== 'normal' && submodules !== 'recursive') {
    throw new JobSetupError(`GIT_SUBMODULE_STRATEGY is "${submodules}"; use none, normal or recursive`);
  }
  const depthRaw = (variableValue(vars, 'GIT_DEPTH') ?? '').trim();
  const depth = /^\d+$/.test(depthRaw) ? Number(depthRaw) : defaultDepth;
  return {
    gitStrategy: strategy === '' ? (allowGitFetch ? 'fetch' : 'clone') : strategy,
    gitDepth: depth,
    submodules,
    getSourcesAttempts: attempts(vars, 'GET_SOURCES_ATTEMPTS'),
    artifactDownloadAttempts: attempts(vars, 'ARTIFACT_DOWNLOAD_ATTEMPTS'),
    restoreCacheAttempts: attempts(vars, 'RESTORE_CACHE_ATTEMPTS'),
    debugTrace: isTruthy(variableValue(vars, 'CI_DEBUG_TRACE')),
  };
}
