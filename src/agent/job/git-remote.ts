/**
 * Where get_sources fetches from, as GitLab Runner 19 decides it (`helpers/url/gitauth.go`): the
 * payload's `repo_url`, or with `clone_url` set in config.toml that URL joined with the project's path
 * (CI_PROJECT_PATH); and for GIT_SUBMODULE_FORCE_HTTPS, `insteadOf` rewrites that send submodules
 * written as SSH URLs of the GitLab server (`git@host:group/project.git`, `ssh://git@host[:port]/…`)
 * over HTTPS to the same base, where the job token authenticates them. Credentials never go into a
 * URL: they travel as a header scoped to the base (git-sources.ts).
 */
import type { GitSetting } from '../../git/host-config.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { RunnerConfig } from '../config/schema.js';
import type { ExportedVariable } from '../../executors/types.js';
import { credentialHeader } from './git-sources.js';

export interface GitRemote {
  /** The URL to fetch from instead of the payload's, without credentials; undefined: the payload's. */
  url?: string;
  /** Settings for every git of the stage. */
  config: GitSetting[];
}

const HOST = /^([A-Za-z0-9-]+\.)*[A-Za-z0-9-]+$|^\[[0-9A-Fa-f:.]+\]$/;
const PROJECT_PATH = /^[\w.-]+(\/[\w.-]+)*$/;

const trimSlash = (url: string): string => url.replace(/\/+$/, '');

/** The remote of `build` on `runner`, given the job's variables. */
export function gitRemote(build: BuildPayload, runner: Pick<RunnerConfig, 'url' | 'clone_url'>, variables: readonly ExportedVariable[], forceHttps: boolean): GitRemote {
  const value = (name: string): string => variables.findLast((v) => v.key === name)?.value ?? '';
  const result: GitRemote = { config: [] };
  if (runner.clone_url) result.url = cloneUrl(runner.clone_url, value('CI_PROJECT_PATH'), build.repo_url);
  if (!forceHttps) return result;
  const base = trimSlash(runner.clone_url ?? runner.url);
  const host = value('CI_SERVER_SHELL_SSH_HOST') || value('CI_SERVER_HOST') || new URL(base).hostname;
  const port = value('CI_SERVER_SHELL_SSH_PORT');
  if (!HOST.test(host) || !/^\d{0,5}$/.test(port)) return result;
  if (port === '' || port === '22') result.config.push([`url.${base}/.insteadOf`, `git@${host}:`], [`url.${base}.insteadOf`, `ssh://git@${host}`]);
  else result.config.push([`url.${base}.insteadOf`, `ssh://git@${host}:${port}`]);
  // The rewritten URLs go to the runner's coordinator: the job token goes there too when it is another origin.
  const auth = credentialHeader(build.repo_url, base);
  if (auth && auth.base !== credentialHeader(build.repo_url, result.url)?.base) result.config.push([`http.${auth.base}.extraHeader`, auth.header]);
  return result;
}

/** `clone_url` joined with the project's path (`.git` added); the payload URL's path when the variable cannot be used. */
function cloneUrl(base: string, projectPath: string, repoUrl: string): string {
  if (PROJECT_PATH.test(projectPath) && !projectPath.split('/').includes('..')) return `${trimSlash(base)}/${projectPath}.git`;
  const path = new URL(repoUrl).pathname;
  return `${trimSlash(base)}${path}`;
}
