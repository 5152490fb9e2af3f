/**
 * GIT_SUBMODULE_STRATEGY's commands for get_sources, one level of submodules at a time.
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
 * (through `git submodule foreach`, once the submodule is checked out) before git enters them.
 */
import { shellQuote } from '../../executors/shell/quote.js';

/** In a submodule (`git submodule foreach` sets $name, $sm_path and $toplevel): the expected link, or none. */
const LINK = [
  'if [ -f "$toplevel/.git" ]; then p=$(sed -n "s/^gitdir: //p" "$toplevel/.git"); else p=.git; fi',
  'want="gitdir: $(printf %s "$sm_path" | sed "s#[^/][^/]*#..#g")/$p/modules/$name"',
  'if [ -L .git ] || [ ! -f .git ] || [ "$(cat .git)" != "$want" ]; then',
  '  rm -rf .git',
  '  if [ -d "$toplevel/$p/modules/$name" ]; then printf "%s\\n" "$want" > .git; else find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +; fi',
  'fi',
].join('\n');

/** One level, in a work tree whose own link is checked; with `recursive`, the next levels after it. */
function level(recursive: boolean): string {
  return [
    'git submodule init',
    'git submodule --quiet foreach "eval \\"\\$CI_RUNNER_SUBMODULE_LINK\\""',
    'git submodule sync',
    'git submodule foreach "git clean -ffdx -q && git reset --hard -q"',
    'git submodule update',
    ...(recursive ? ['git submodule --quiet foreach "eval \\"\\$CI_RUNNER_SUBMODULES\\""'] : []),
  ].join(' && ');
}

/** The get_sources lines, run in the project dir after the superproject's checkout. */
export function submoduleLines(recursive: boolean): string[] {
  return [
    `export CI_RUNNER_SUBMODULE_LINK=${shellQuote(LINK)} CI_RUNNER_SUBMODULES=${shellQuote(level(recursive))}`,
    'eval "$CI_RUNNER_SUBMODULES"',
  ];
}
