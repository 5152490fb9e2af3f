/**
 * The get_sources stage as shell commands (docs/protocol-v1.md §10.9): clone, fetch into the slot's existing
 * checkout, or nothing; then check out `sha` and update submodules. What the coordinator sent (URL,
 * refspecs, ref, sha) was validated with the payload (protocol/git-source.ts) and is passed after `--`
 * wherever git takes it, so none of it can be an option. The commands run unechoed; the
 * notices they print never contain the repository credentials (the URL is shown redacted). They
 * expect `guardCheckout` (src/git/checkout-guard.ts) to have run on the project dir first.
 */
import { shellQuote } from '../../executors/shell/quote.js';
import type { BuildPayload } from '../../protocol/types.js';
import { redactUrl } from './build-dir.js';
import { HOST_GIT_SETTINGS, type GitSetting } from '../../git/host-config.js';
import { gitTlsConfig, gitTlsEnvLines, type GitTls } from './git-tls.js';
import { submoduleLines } from './git-submodules.js';

export type GitStrategy = 'clone' | 'fetch' | 'none';
export type SubmoduleStrategy = 'none' | 'normal' | 'recursive';

export interface GitSourcesOptions {
  build: BuildPayload;
  projectDir: string;
  strategy: GitStrategy;
  /** Shallow clone/fetch depth; 0 = full history. */
  depth: number;
  submodules: SubmoduleStrategy;
  /** `pre_clone_script` lines, run first. */
  preCloneScript?: string;
  /** The runner's CA and client certificate, for the coordinator's URL. */
  tls?: GitTls;
  /** Where each git command writes when it begins (`--debug`'s timeline, timeline.ts); bash only. */
  stepFile?: string;
}

/** Set (to 1) by the get_sources script when the kept checkout is at the job's commit already. */
const AT_SHA = '__ci_at_sha';

const notice = (text: string): string => `printf '\\033[32;1m%s\\033[0;m\\n' ${shellQuote(text)}`;

/** Commands for the get_sources stage; they run with `set -e` in the slot dir. */
export function gitSourcesCommands(options: GitSourcesOptions): string[] {
  const { build, projectDir } = options;
  const dir = shellQuote(projectDir);
  const url = shellQuote(redactUrl(build.repo_url));
  const lines: string[] = [];
  if (options.preCloneScript) lines.push(...options.preCloneScript.split('\n'));
  if (options.strategy === 'none') {
    lines.push(notice('Skipping Git repository setup'), `mkdir -p ${dir}`);
    return lines;
  }
  // Credentials travel as an HTTP header in git's environment (GIT_CONFIG_*), scoped to the
  // server's URL: they are never on a command line (visible in `ps`), in .git/config, or in output,
  // and submodules on the same server authenticate too.
  // Every git command of the stage, submodule clones included, also runs with no prompt and with
  // HOST_GIT_SETTINGS (no credential helper or askpass, so the runner host's own credentials are
  // never offered to the server; nothing a job left in the checkout runs: guardCheckout did the rest).
  const auth = credentialHeader(build.repo_url);
  const config: GitSetting[] = [];
  if (auth) config.push([`http.${auth.base}.extraHeader`, auth.header]);
  // The runner's private CA and client certificate reach git the same way, for the coordinator only.
  config.push(...gitTlsConfig(options.tls), ...HOST_GIT_SETTINGS);
  lines.push(
    'export GIT_TERMINAL_PROMPT=0',
    `export GIT_CONFIG_COUNT=${config.length} ${config
      .map(([key, value], i) => `GIT_CONFIG_KEY_${i}=${shellQuote(key)} GIT_CONFIG_VALUE_${i}=${shellQuote(value)}`)
      .join(' ')}`,
    ...gitTlsEnvLines(options.tls),
  );
  const depthArgs = options.depth > 0 ? ` --depth ${options.depth}` : '';
  lines.push(...(build.refspecs && build.refspecs.length > 0 ? refspecLines(options, url, dir, depthArgs, build.refspecs) : refLines(options, url, dir, depthArgs)));
  lines.push(
    `cd ${dir}`,
    notice(`Checking out ${build.sha.slice(0, 8)} as ${build.ref}...`),
    // The tree was cleaned before the fetch (or is fresh), so a forced checkout leaves it clean. A
    // kept checkout found at the job's commit (fetchOrElse) has been reset to it already.
    `if [ -z "\${${AT_SHA}:-}" ]; then`,
    `git checkout -f -q ${shellQuote(build.sha)} --`,
    'fi',
  );
  if (options.submodules !== 'none') {
    const recursive = options.submodules === 'recursive';
    lines.push(notice(`Updating/initializing submodules${recursive ? ' recursively' : ''}...`), ...submoduleLines(recursive));
  }
  return options.stepFile ? withStepMarks(lines, options.stepFile) : lines;
}

/**
 * `lines` with a mark before each git command and at the end: bash's `$EPOCHREALTIME` is read without
 * a process, and a mark that cannot be written is dropped, never failing the stage (`set -e`).
 */
function withStepMarks(lines: string[], stepFile: string): string[] {
  const file = shellQuote(stepFile);
  const marked = lines.flatMap((line) => {
    const words = line.trimStart().split(' ');
    if (words[0] !== 'git') return [line];
    const verb = words.slice(1).find((w) => !w.startsWith('-') && !w.includes('=')) ?? '';
    return [`__ci_step ${shellQuote(`git ${verb}`)}`, line];
  });
  return [`__ci_step() { printf '%s %s\\n' "\${EPOCHREALTIME:-}" "$1" 2>/dev/null >> ${file} || :; }`, ...marked, '__ci_step end'];
}

/** `Authorization: Basic …` for the user:password in `repoUrl`, and the URL base it applies to. */
export function credentialHeader(repoUrl: string): { base: string; header: string } | undefined {
  if (!URL.canParse(repoUrl)) return undefined;
  const url = new URL(repoUrl);
  if (!url.username && !url.password) return undefined;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return { base: `${url.protocol}//${url.host}/`, header: `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

/** Clone or fetch of the ref's branch or tag (v1, and v4 without refspecs). */
function refLines(options: GitSourcesOptions, url: string, dir: string, depthArgs: string): string[] {
  const { build } = options;
  const refspec = build.tag ? `refs/tags/${build.ref}` : `refs/heads/${build.ref}`;
  const cloneArgs = options.depth > 0 ? `${depthArgs} --branch=${shellQuote(build.ref)}` : '';
  // guardCheckout left the project dir empty unless it kept a checkout to fetch into.
  const clone = [
    notice(`Cloning repository for ${build.ref} with git depth ${options.depth || 'full'} from ${redactUrl(build.repo_url)}...`),
    `git clone -q --no-checkout${cloneArgs} -- ${url} ${dir}`,
  ];
  if (options.strategy === 'clone') return clone;
  const specs = options.depth > 0 ? [`+${refspec}:${build.tag ? refspec : `refs/remotes/origin/${build.ref}`}`] : ['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'];
  return fetchOrElse(options, dir, `git fetch -q --prune${depthArgs} -- ${url} ${specs.map(shellQuote).join(' ')}`, clone, specs);
}

/**
 * A shell test that is true when the kept checkout's HEAD is `sha`, detached (as the last job's
 * checkout left it), and every ref `refspecs` fetch into names `sha` too: the commit is here, a fetch
 * would bring nothing the job asked for (a later job of the same pipeline in the same slot), and
 * `git reset --hard` is the checkout. Undefined when a refspec has no single destination (a pattern, or
 * none). HEAD is read by the shell's `read`, and so are the refs while each is a loose file holding
 * `sha` (as the last fetch wrote it: a loose ref is what git reads before packed-refs); else one
 * `git rev-parse` answers for all of them (packed refs, annotated tags, another ref store).
 */
function atShaAlready(sha: string, refspecs: readonly string[]): string | undefined {
  const destinations = refspecs.map((spec) => (spec.includes(':') ? spec.slice(spec.indexOf(':') + 1) : ''));
  if (destinations.length === 0 || destinations.some((ref) => ref === '' || ref.includes('*'))) return undefined;
  const holds = (file: string, variable: string): string => `{ IFS= read -r ${variable} < ${shellQuote(file)}; } 2>/dev/null && [ "$${variable}" = ${shellQuote(sha)} ]`;
  const refs = destinations.map((ref) => shellQuote(`${ref}^{commit}`)).join(' ');
  const expected = shellQuote(destinations.map(() => sha).join('\n'));
  const revParse = `[ "$(git rev-parse -q ${refs} 2>/dev/null)" = ${expected} ]`;
  const loose = destinations.every(isLooseRefName) ? destinations.map((ref) => holds(`.git/${ref}`, '__ci_ref')).join(' && ') : undefined;
  return `${holds('.git/HEAD', '__ci_head')} && { ${loose ? `{ ${loose}; } || ` : ''}${revParse}; }`;
}

/** A ref name whose loose file is `.git/<name>`: under refs/, no `..`, nothing a path could misread. */
function isLooseRefName(ref: string): boolean {
  return /^refs\/[A-Za-z0-9._/-]+$/.test(ref) && !ref.split('/').some((part) => part === '' || part.startsWith('.'));
}

/**
 * The fetch strategy: into the kept checkout, cleaned first, when there is one, else `otherwise`.
 * origin's URL (relative submodule URLs resolve against it) is the current one: guardCheckout wrote it.
 */
function fetchOrElse(options: GitSourcesOptions, dir: string, fetch: string, otherwise: string[], refspecs: readonly string[]): string[] {
  const { build } = options;
  const here = atShaAlready(build.sha, refspecs);
  const skip = notice(`Commit ${build.sha.slice(0, 8)} is here already under the refs this job fetches: skipping the fetch`);
  return [
    `if [ -d ${shellQuote(`${options.projectDir}/.git`)} ]; then`,
    notice(`Fetching changes from ${redactUrl(build.repo_url)}...`),
    `cd ${dir}`,
    'git clean -ffdx -q',
    // Leaves HEAD and the refs as they are: the check below reads them after it.
    'git reset --hard -q',
    ...(here ? [`if ${here}; then`, skip, `${AT_SHA}=1`, 'else', fetch, 'fi'] : [fetch]),
    'else',
    ...otherwise,
    'fi',
  ];
}

/**
 * v4's `git_info.refspecs` (the pipeline's own ref first, then the branch or tag): what GitLab Runner
 * fetches, into a new repository (clone) or the kept checkout (fetch), `git_info.depth` deep.
 */
function refspecLines(options: GitSourcesOptions, url: string, dir: string, depthArgs: string, refspecs: readonly string[]): string[] {
  const { build } = options;
  const specs = refspecs.map(shellQuote).join(' ');
  const init = [
    notice(`Cloning repository for ${build.ref} with git depth ${options.depth || 'full'} from ${redactUrl(build.repo_url)}...`),
    `git -c init.defaultBranch=main init -q -- ${dir}`,
    `cd ${dir}`,
    `git remote add -- origin ${url}`,
    `git fetch -q --prune${depthArgs} -- origin ${specs}`,
  ];
  if (options.strategy === 'clone') return init;
  return fetchOrElse(options, dir, `git fetch -q --prune${depthArgs} -- ${url} ${specs}`, init, refspecs);
}
