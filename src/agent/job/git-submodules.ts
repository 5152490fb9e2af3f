/**
 * GIT_SUBMODULE_STRATEGY's commands for get_sources, one level of submodules at a time, with
 * GIT_SUBMODULE_PATHS (the first level only, as git's pathspecs limit the superproject's submodules),
 * GIT_SUBMODULE_DEPTH, GIT_SUBMODULE_UPDATE_FLAGS and GIT_CLEAN_FLAGS as GitLab Runner 19 applies them.
 *
 * git runs a command inside a submodule wherever that submodule's `.git` leads: in a reused
 * checkout that is a file (or a directory) a job could have written, naming any repository on the
 * runner's machine. So before git runs anything in a submodule, each one git would enter gets the
 * link the runner expects — `gitdir: <up to the parent's work tree>/<parent's git dir>/modules/<name>`,
 * the layout git itself writes — or, without such a git dir, none at all (its directory is emptied
 * and `update` clones it afresh). The git dirs under `.git/modules` were checked and their config
 * rewritten by guardCheckout; the submodule's config gets its URL from `sync`.
 *
 * Recursion is by level, not `--recursive`: each submodule's own submodules are linked the same way
 * (through `git submodule foreach`, once the submodule is checked out) before git enters them. The
 * commands a level runs travel in environment variables that `foreach` hands to each submodule's
 * shell, so the job's flags and paths are quoted once, for `eval`.
 */
import { shellQuote } from '../../executors/common/quote.js';

/** In a submodule (`git submodule foreach` sets $name, $sm_path and $toplevel): the expected link, or none. */
const LINK = [
  'if [ -f "$toplevel/.git" ]; then p=$(sed -n "s/^gitdir: //p" "$toplevel/.git"); else p=.git; fi',
  'want="gitdir: $(printf %s "$sm_path" | sed "s#[^/][^/]*#..#g")/$p/modules/$name"',
  'if [ -L .git ] || [ ! -f .git ] || [ "$(cat .git)" != "$want" ]; then',
  '  rm -rf .git',
  '  if [ -d "$toplevel/$p/modules/$name" ]; then printf "%s\\n" "$want" > .git; else find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +; fi',
  'fi',
].join('\n');

export interface SubmoduleOptions {
  recursive: boolean;
  /** GIT_SUBMODULE_PATHS: pathspecs of the superproject's submodules to update (all when empty). */
  paths?: readonly string[];
  /** GIT_SUBMODULE_DEPTH; 0 = full history. */
  depth?: number;
  /** GIT_SUBMODULE_UPDATE_FLAGS, checked against the allowlist. */
  updateFlags?: readonly string[];
  /** GIT_CLEAN_FLAGS when set, else `-ffdx`, for the submodules' work trees. */
  cleanFlags?: readonly string[];
  /** `git lfs pull` in each submodule once updated (git-lfs installed, GIT_LFS_SKIP_SMUDGE unset). */
  lfs?: boolean;
}

/**
 * True (as a shell test) when the checkout has a file git-lfs tracks: one whose `filter` attribute is
 * `lfs`, from whichever attributes file says so. git-lfs pulls those files and no others, so where there
 * are none `git lfs pull` would do nothing, at the cost of two Go processes (~50 ms). The whole list is
 * read, not its first line alone: under `pipefail` an early reader could fail the test on SIGPIPE.
 */
export const HAS_LFS_FILES = `[ -n "$(git ls-files -- ':(attr:filter=lfs)')" ]`;

/**
 * `git lfs pull` in a submodule, from its own remote's LFS endpoint only: `lfs.url` on the command
 * line beats any `.lfsconfig` the repository carries (which could name a `file://` store on the runner).
 */
const SUBMODULE_LFS_PULL = [
  'u=$(git remote get-url origin 2>/dev/null) || exit 0',
  'case "$u" in http://*|https://*) ;; *) exit 0 ;; esac',
  'case "$u" in *.git) u="$u/info/lfs" ;; *) u="$u.git/info/lfs" ;; esac',
  `${HAS_LFS_FILES} || exit 0`,
  'git -c lfs.url="$u" lfs pull',
].join('; ');

const words = (list: readonly string[]): string => list.map((word) => ` ${shellQuote(word)}`).join('');

/** One level, in a work tree whose own link is checked; with `recursive`, the next levels after it. */
function level(options: SubmoduleOptions, paths: readonly string[]): string {
  const pathArgs = paths.length > 0 ? ` --${words(paths)}` : '';
  const depth = options.depth && options.depth > 0 ? ` --depth ${options.depth}` : '';
  return [
    `git submodule init${pathArgs}`,
    'git submodule --quiet foreach "eval \\"\\$CI_RUNNER_SUBMODULE_LINK\\""',
    `git submodule sync${pathArgs}`,
    'git submodule foreach "eval \\"\\$CI_RUNNER_SUBMODULE_CLEAN\\""',
    `git submodule update --init${depth}${words(options.updateFlags ?? [])}${pathArgs}`,
    ...(options.recursive ? ['git submodule --quiet foreach "eval \\"\\$CI_RUNNER_SUBMODULES\\""'] : []),
  ].join(' && ');
}

/** The get_sources lines, run in the project dir after the superproject's checkout. */
export function submoduleLines(options: SubmoduleOptions): string[] {
  const cleanFlags = options.cleanFlags && options.cleanFlags.length > 0 ? options.cleanFlags : ['-ffdx'];
  const clean = `git clean${words(cleanFlags)} && git reset --hard -q`;
  const lines = [
    `export CI_RUNNER_SUBMODULE_LINK=${shellQuote(LINK)} CI_RUNNER_SUBMODULE_CLEAN=${shellQuote(clean)} CI_RUNNER_SUBMODULES=${shellQuote(level(options, []))}`,
    `eval ${shellQuote(level(options, options.paths ?? []))}`,
  ];
  if (options.lfs) {
    lines.push(
      'if command -v git-lfs >/dev/null 2>&1; then',
      `printf '\\033[32;1m%s\\033[0;m\\n' 'Pulling LFS files...'`,
      `git submodule foreach${options.recursive ? ' --recursive' : ''} ${shellQuote(SUBMODULE_LFS_PULL)}`,
      'fi',
    );
  }
  return lines;
}
