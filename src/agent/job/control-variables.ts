/**
 * The control variables the runner reads from a job's variables (docs/protocol-v1.md §10.6; the table
 * of them all is control-table.ts), as GitLab Runner 19 reads them (`common/build_settings.go`): a
 * value it cannot use falls back to the default with a warning line saying which variable and what it
 * accepts; attempts outside 1–10 are clamped. A job that sets a variable the table marks as warned
 * gets one warning line naming it and why. The one thing that fails a job here is a git option the
 * runner will not run (git/job-options.ts): the message names the variable and the option.
 */
import { checkJobGitOptions, RefusedGitOption, type JobGitCommand } from '../../git/job-options.js';
import type { FailureReason } from '../../protocol/v4/failure-reason.js';
import { controlVariable } from './control-table.js';
import type { GitStrategy, SubmoduleStrategy } from './git-sources.js';
import { variableValue, type JobVariable } from './variables.js';

/** A control variable the runner cannot honour; its message ends the trace as the failure reason. */
export class JobSetupError extends Error {
  constructor(
    message: string,
    readonly code = 'JOB_SETUP',
    /** What v4's final update says: the job's own settings, unless the runner's refuse them. */
    readonly reason: FailureReason = 'script_failure',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface JobControls {
  gitStrategy: GitStrategy;
  gitCheckout: boolean;
  gitDepth: number;
  /** `git clean` options after the checkout; empty: no clean (GIT_CLEAN_FLAGS `none`). */
  cleanFlags: string[];
  fetchFlags: string[];
  cloneFlags: string[];
  submodules: SubmoduleStrategy;
  submodulePaths: string[];
  submoduleDepth: number;
  submoduleUpdateFlags: string[];
  submoduleForceHttps: boolean;
  lfsSkipSmudge: boolean;
  getSourcesAttempts: number;
  artifactDownloadAttempts: number;
  restoreCacheAttempts: number;
  debugTrace: boolean;
  /** ARTIFACT_COMPRESSION_LEVEL as a deflate level; absent: the default. */
  artifactCompressionLevel?: number;
  /** Lines for the job log: values that could not be used, and variables set that are not honoured. */
  warnings: string[];
}

export interface ReadControlsOptions {
  /** The server's `allow_git_fetch`: the default strategy is `fetch` when true. */
  allowGitFetch: boolean;
  /** The server's depth (v4's `git_info.depth`) for when GIT_DEPTH is not set. */
  defaultDepth?: number;
  /** Names the job (or the runner's `environment`) set itself: only those are warned about. */
  setByJob?: ReadonlySet<string>;
}

/** Go's strconv.ParseBool, which GitLab Runner reads booleans with. */
function parseBool(raw: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return undefined;
}

/** GitLab Runner's compression level names as deflate levels (its fastzip archiver's). */
const DEFLATE_LEVELS: Readonly<Record<string, number>> = { fastest: 0, fast: 1, slow: 7, slowest: 9 };

/** The deflate level a level name asks for; undefined for the default (or a name it cannot use, with a warning). */
function compressionLevel(name: string, value: string, warnings: string[]): number | undefined {
  if (value === '' || value === 'default') return undefined;
  const level = DEFLATE_LEVELS[value];
  if (level === undefined) warnings.push(`${name}: compression level ${JSON.stringify(value)} is invalid, falling back to default`);
  return level;
}

/** Reads the control variables of `vars` (expanded); throws JobSetupError for a refused git option. */
export function readControls(vars: readonly JobVariable[], options: ReadControlsOptions): JobControls {
  const warnings: string[] = [];
  const raw = (name: string): string => variableValue(vars, name) ?? '';
  const bool = (name: string, fallback: boolean): boolean => {
    const value = raw(name);
    if (value === '') return fallback;
    const parsed = parseBool(value);
    if (parsed === undefined) warnings.push(`${name}: expected bool got ${JSON.stringify(value)}, using default value: ${fallback}`);
    return parsed ?? fallback;
  };
  const int = (name: string, fallback: number): number => {
    const value = raw(name).trim();
    if (value === '') return fallback;
    if (!/^[+-]?\d{1,9}$/.test(value)) {
      warnings.push(`${name}: expected int got ${JSON.stringify(value)}, using default value: ${fallback}`);
      return fallback;
    }
    return Number(value);
  };
  const attempts = (name: string): number => {
    const n = int(name, 1);
    const clamped = Math.max(1, Math.min(10, n));
    if (clamped !== n) warnings.push(`${name}: number of attempts out of the range [1, 10], clamping to: ${clamped}`);
    return clamped;
  };
  const flags = (name: string, command: JobGitCommand, fallback: string[]): string[] => {
    const value = raw(name).trim();
    if (value === '') return fallback;
    if (value === 'none') return [];
    try {
      return checkJobGitOptions(name, command, value.split(/\s+/));
    } catch (error) {
      if (error instanceof RefusedGitOption) throw new JobSetupError(error.message, error.code, 'script_failure', { cause: error });
      throw error;
    }
  };

  const defaultStrategy: GitStrategy = options.allowGitFetch ? 'fetch' : 'clone';
  const strategyRaw = raw('GIT_STRATEGY');
  let gitStrategy: GitStrategy = defaultStrategy;
  if (strategyRaw === 'clone' || strategyRaw === 'fetch' || strategyRaw === 'none' || strategyRaw === 'empty') gitStrategy = strategyRaw;
  else if (strategyRaw !== '') warnings.push(`GIT_STRATEGY: expected either 'clone', 'fetch', 'none' or 'empty' got ${JSON.stringify(strategyRaw)}, using default value '${defaultStrategy}'`);
  const noSources = gitStrategy === 'none' || gitStrategy === 'empty';

  const submodulesRaw = raw('GIT_SUBMODULE_STRATEGY');
  let submodules: SubmoduleStrategy = 'none';
  if (submodulesRaw === 'normal' || submodulesRaw === 'recursive') submodules = submodulesRaw;
  else if (submodulesRaw !== '' && submodulesRaw !== 'none') warnings.push(`GIT_SUBMODULE_STRATEGY: expected either 'normal', 'recursive' or 'none' got ${JSON.stringify(submodulesRaw)}`);

  const depthRaw = raw('GIT_DEPTH').trim();
  const gitDepth = /^\d{1,9}$/.test(depthRaw) ? Number(depthRaw) : (options.defaultDepth ?? 0);
  const submodulePaths = raw('GIT_SUBMODULE_PATHS').trim().split(/\s+/).filter(Boolean);
  if (submodulePaths.includes(':(exclude)')) throw new JobSetupError(`GIT_SUBMODULE_PATHS: invalid submodule pathspec ${JSON.stringify(submodulePaths)}`, 'BAD_SUBMODULE_PATHS');

  const controls: JobControls = {
    gitStrategy,
    gitCheckout: !noSources && bool('GIT_CHECKOUT', true),
    gitDepth,
    cleanFlags: flags('GIT_CLEAN_FLAGS', 'clean', ['-ffdx']),
    fetchFlags: flags('GIT_FETCH_EXTRA_FLAGS', 'fetch', ['--prune', '--quiet']),
    cloneFlags: flags('GIT_CLONE_EXTRA_FLAGS', 'clone', []),
    submodules: noSources ? 'none' : submodules,
    submodulePaths,
    submoduleDepth: Math.max(0, int('GIT_SUBMODULE_DEPTH', gitDepth)),
    submoduleUpdateFlags: flags('GIT_SUBMODULE_UPDATE_FLAGS', 'submodule update', []),
    submoduleForceHttps: bool('GIT_SUBMODULE_FORCE_HTTPS', false),
    lfsSkipSmudge: bool('GIT_LFS_SKIP_SMUDGE', false),
    getSourcesAttempts: attempts('GET_SOURCES_ATTEMPTS'),
    artifactDownloadAttempts: attempts('ARTIFACT_DOWNLOAD_ATTEMPTS'),
    restoreCacheAttempts: attempts('RESTORE_CACHE_ATTEMPTS'),
    debugTrace: bool('CI_DEBUG_TRACE', false),
    warnings,
  };
  const level = compressionLevel('ARTIFACT_COMPRESSION_LEVEL', raw('ARTIFACT_COMPRESSION_LEVEL'), warnings);
  if (level !== undefined) controls.artifactCompressionLevel = level;
  for (const name of options.setByJob ?? []) {
    const entry = controlVariable(name);
    if (entry?.support.status === 'warned') warnings.push(`${name} is not honoured by this runner: ${entry.support.reason}`);
  }
  return controls;
}
