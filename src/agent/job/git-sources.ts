/**
 * The get_sources stage as shell commands (docs/protocol-v1.md §10.9), in GitLab Runner 19's order:
 * the pre-get-sources hooks, clone or fetch (git-fetch.ts), the checkout of `sha` (GIT_CHECKOUT), the
 * clean (GIT_CLEAN_FLAGS), `git lfs pull`, the submodules (git-submodules.ts), the post-get-sources
 * hooks; or, for GIT_STRATEGY `none` and `empty`, no git at all. What the coordinator sent (URL,
 * refspecs, ref, sha) was validated with the payload (protocol/git-source.ts) and is passed after `--`
 * wherever git takes it, and the job's git options are the allowlisted ones (git/job-options.ts), so
 * none of it can make git run a program. The commands run unechoed; the notices they print never
 * contain the repository credentials (the URL is shown redacted). They expect `guardCheckout`
 * (src/git/checkout-guard.ts) to have run on the project dir first.
 */
import { shellQuote } from '../../executors/common/quote.js';
import type { BuildPayload } from '../../protocol/types.js';
import { redactUrl } from './build-dir.js';
import { HOST_GIT_SETTINGS, type GitSetting } from '../../git/host-config.js';
import { AT_SHA, fetchLines, notice } from './git-fetch.js';
import { gitTlsConfig, gitTlsEnvLines, type GitTls } from './git-tls.js';
import { HAS_LFS_FILES, submoduleLines } from './git-submodules.js';

export type GitStrategy = 'clone' | 'fetch' | 'none' | 'empty';
export type SubmoduleStrategy = 'none' | 'normal' | 'recursive';

export interface GitSourcesOptions {
  build: BuildPayload;
  projectDir: string;
  strategy: GitStrategy;
  /** Shallow clone/fetch depth; 0 = full history. */
  depth: number;
  submodules: SubmoduleStrategy;
  /** GIT_CHECKOUT (default true). */
  checkout?: boolean;
  /** GIT_CLEAN_FLAGS after the checkout (default `-ffdx`; empty: no clean). */
  cleanFlags?: readonly string[];
  /** GIT_FETCH_EXTRA_FLAGS (default `--prune --quiet`). */
  fetchFlags?: readonly string[];
  /** GIT_CLONE_EXTRA_FLAGS, for v1's `git clone`. */
  cloneFlags?: readonly string[];
  submodulePaths?: readonly string[];
  /** GIT_SUBMODULE_DEPTH (default: `depth`). */
  submoduleDepth?: number;
  submoduleUpdateFlags?: readonly string[];
  /** `git lfs pull` after the checkout when git-lfs is installed and a file is tracked by it (default true; GIT_LFS_SKIP_SMUDGE turns it off). */
  lfs?: boolean;
  /** Where to fetch from instead of `build.repo_url` (`clone_url`), without credentials. */
  remoteUrl?: string;
  /** More settings for every git of the stage (GIT_SUBMODULE_FORCE_HTTPS's `insteadOf`s). */
  extraConfig?: readonly GitSetting[];
  /** Lines run before the clone or fetch (pre-get-sources hooks), and after the submodules. */
  preScript?: readonly string[];
  postScript?: readonly string[];
  /** The runner's CA and client certificate, for the coordinator's URL. */
  tls?: GitTls;
  /** Where each git command writes when it begins (`--debug`'s timeline, timeline.ts); bash only. */
  stepFile?: string;
}

/** Commands for the get_sources stage; they run with `set -e` in the slot dir. */
export function gitSourcesCommands(options: GitSourcesOptions): string[] {
  const { build, projectDir } = options;
  const dir = shellQuote(projectDir);
  if (options.strategy === 'none') return [notice('Skipping Git repository setup'), `mkdir -p ${dir}`];
  if (options.strategy === 'empty') return [notice('Skipping Git repository setup and creating an empty build directory'), `rm -rf ${dir}`, `mkdir -p ${dir}`];
  const remote = options.remoteUrl ?? redactUrl(build.repo_url);
  const lines: string[] = [...(options.preScript ?? [])];
  // Credentials travel as an HTTP header in git's environment (GIT_CONFIG_*), scoped to the
  // server's URL: they are never on a command line (visible in `ps`), in .git/config, or in output,
  // and submodules on the same server authenticate too.
  // Every git command of the stage, submodule clones included, also runs with no prompt and with
  // HOST_GIT_SETTINGS (no credential helper or askpass, so the runner host's own credentials are
  // never offered to the server; nothing a job left in the checkout runs: guardCheckout did the rest).
  const auth = credentialHeader(build.repo_url, remote);
  const config: GitSetting[] = [];
  if (auth) config.push([`http.${auth.base}.extraHeader`, auth.header]);
  // The runner's private CA and client certificate reach git the same way, for the coordinator only.
  config.push(...gitTlsConfig(options.tls), ...HOST_GIT_SETTINGS, ...(options.extraConfig ?? []));
  lines.push(
    // git-lfs's smudge filter stays off during the checkout; `git lfs pull` fetches the files after it.
    'export GIT_TERMINAL_PROMPT=0 GIT_LFS_SKIP_SMUDGE=1',
    `export GIT_CONFIG_COUNT=${config.length} ${config
      .map(([key, value], i) => `GIT_CONFIG_KEY_${i}=${shellQuote(key)} GIT_CONFIG_VALUE_${i}=${shellQuote(value)}`)
      .join(' ')}`,
    ...gitTlsEnvLines(options.tls),
  );
  lines.push(...fetchLines({ build, projectDir, strategy: options.strategy, depth: options.depth, fetchFlags: options.fetchFlags ?? ['--prune', '--quiet'], cloneFlags: options.cloneFlags ?? [], url: remote }));
  if (options.checkout ?? true) {
    const cleanFlags = options.cleanFlags ?? ['-ffdx'];
    lines.push(
      notice(`Checking out ${build.sha.slice(0, 8)} as detached HEAD (ref is ${build.ref})...`),
      // A kept checkout found at the job's commit (git-fetch.ts) has been reset to it already.
      `if [ -z "\${${AT_SHA}:-}" ]; then`,
      `git checkout -f -q ${shellQuote(build.sha)} --`,
      'fi',
      ...(cleanFlags.length > 0 ? [`git clean ${cleanFlags.map(shellQuote).join(' ')}`] : []),
    );
    // lfs.url on the command line: the project's own LFS endpoint, whatever `.lfsconfig` says.
    if (options.lfs ?? true) lines.push(`if command -v git-lfs >/dev/null 2>&1 && ${HAS_LFS_FILES}; then`, `git -c lfs.url=${shellQuote(lfsUrl(remote))} lfs pull`, 'fi');
  } else lines.push(notice('Skipping Git checkout'));
  if (options.submodules === 'none') lines.push(notice('Skipping Git submodules setup'));
  else {
    const recursive = options.submodules === 'recursive';
    const depth = options.submoduleDepth ?? options.depth;
    lines.push(
      notice(`Updating/initializing submodules${recursive ? ' recursively' : ''}${depth > 0 ? ` with git depth set to ${depth}` : ''}...`),
      ...submoduleLines({
        recursive,
        paths: options.submodulePaths ?? [],
        depth,
        updateFlags: options.submoduleUpdateFlags ?? [],
        cleanFlags: options.cleanFlags ?? [],
        lfs: options.lfs ?? true,
      }),
    );
  }
  lines.push(...(options.postScript ?? []));
  return options.stepFile ? withStepMarks(lines, options.stepFile) : lines;
}

/** git-lfs's endpoint for a repository URL, as git-lfs derives it (`<url>.git/info/lfs`). */
function lfsUrl(url: string): string {
  return url.endsWith('.git') ? `${url}/info/lfs` : `${url}.git/info/lfs`;
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

/**
 * `Authorization: Basic …` for the user:password in `repoUrl`, and the URL base it applies to: the
 * base of `remoteUrl` (the URL git fetches from, `clone_url`'s when set) or else of `repoUrl`.
 */
export function credentialHeader(repoUrl: string, remoteUrl = repoUrl): { base: string; header: string } | undefined {
  if (!URL.canParse(repoUrl) || !URL.canParse(remoteUrl)) return undefined;
  const url = new URL(repoUrl);
  if (!url.username && !url.password) return undefined;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const remote = new URL(remoteUrl);
  return { base: `${remote.protocol}//${remote.host}/`, header: `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}
