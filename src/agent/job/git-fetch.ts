/**
 * The clone or fetch part of get_sources (git-sources.ts): v4's refspecs fetched into a new repository
 * or the kept checkout, as GitLab Runner 19 does it (`git init` + `git fetch`), or v1's ref cloned with
 * `git clone` or fetched. A kept checkout already at the job's commit skips the fetch.
 */
import { shellQuote } from '../../executors/common/quote.js';
import type { BuildPayload } from '../../protocol/types.js';

/** Set (to 1) by the get_sources script when the kept checkout is at the job's commit already. */
export const AT_SHA = '__ci_at_sha';

export const notice = (text: string): string => `printf '\\033[32;1m%s\\033[0;m\\n' ${shellQuote(text)}`;

export interface FetchOptions {
  build: BuildPayload;
  projectDir: string;
  strategy: 'clone' | 'fetch';
  /** Shallow depth; 0 = full history. */
  depth: number;
  /** GIT_FETCH_EXTRA_FLAGS (default `--prune --quiet`), checked against the allowlist. */
  fetchFlags: readonly string[];
  /** GIT_CLONE_EXTRA_FLAGS, for v1's `git clone`. */
  cloneFlags: readonly string[];
  /** The URL git fetches from, without credentials (they travel as a header). */
  url: string;
}

const words = (list: readonly string[]): string => list.map((word) => ` ${shellQuote(word)}`).join('');

/** The lines that leave the project dir holding the job's objects and refs; they end in the project dir. */
export function fetchLines(options: FetchOptions): string[] {
  const refspecs = options.build.refspecs ?? [];
  return refspecs.length > 0 ? refspecLines(options, refspecs) : refLines(options);
}

/** `git fetch` with the job's flags and depth; with no depth, a shallow checkout is made whole (`--unshallow`). */
function fetchCommand(options: FetchOptions, remote: string, specs: readonly string[]): string[] {
  const fetch = `git fetch${words(options.fetchFlags)}${options.depth > 0 ? ` --depth ${options.depth}` : ''}`;
  const tail = ` -- ${remote}${words(specs)}`;
  if (options.depth > 0) return [`${fetch}${tail}`];
  return ['if [ -f .git/shallow ]; then', `${fetch} --unshallow${tail}`, 'else', `${fetch}${tail}`, 'fi'];
}

function fetchingNotice(depth: number): string {
  return notice(depth > 0 ? `Fetching changes with git depth set to ${depth}...` : 'Fetching changes...');
}

/**
 * v4's `git_info.refspecs` (the pipeline's own ref first, then the branch or tag): fetched into a new
 * repository (clone, or no kept checkout) or the kept checkout (fetch), `depth` deep.
 */
function refspecLines(options: FetchOptions, refspecs: readonly string[]): string[] {
  const dir = shellQuote(options.projectDir);
  const url = shellQuote(options.url);
  const init = [
    fetchingNotice(options.depth),
    `git -c init.defaultBranch=main init -q -- ${dir}`,
    `cd ${dir}`,
    `git remote add -- origin ${url}`,
    notice('Created fresh repository.'),
    ...fetchCommand(options, 'origin', refspecs),
  ];
  if (options.strategy === 'clone') return init;
  return fetchOrElse(options, fetchCommand(options, url, refspecs), init, refspecs);
}

/** Clone or fetch of the ref's branch or tag (v1, and v4 without refspecs). */
function refLines(options: FetchOptions): string[] {
  const { build } = options;
  const dir = shellQuote(options.projectDir);
  const url = shellQuote(options.url);
  const refspec = build.tag ? `refs/tags/${build.ref}` : `refs/heads/${build.ref}`;
  const shallow = options.depth > 0 ? ` --depth ${options.depth} --branch=${shellQuote(build.ref)}` : '';
  // guardCheckout left the project dir empty unless it kept a checkout to fetch into.
  const clone = [
    notice(options.depth > 0 ? `Cloning repository for ${build.ref} with git depth set to ${options.depth}...` : `Cloning repository for ${build.ref}...`),
    `git clone -q --no-checkout${shallow}${words(options.cloneFlags)} -- ${url} ${dir}`,
    `cd ${dir}`,
  ];
  if (options.strategy === 'clone') return clone;
  const specs = options.depth > 0 ? [`+${refspec}:${build.tag ? refspec : `refs/remotes/origin/${build.ref}`}`] : ['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'];
  return fetchOrElse(options, fetchCommand(options, url, specs), clone, specs);
}

/**
 * The fetch strategy: into the kept checkout when there is one, else `otherwise`. origin's URL
 * (relative submodule URLs resolve against it) is the current one: guardCheckout wrote it.
 */
function fetchOrElse(options: FetchOptions, fetch: string[], otherwise: string[], refspecs: readonly string[]): string[] {
  const { build } = options;
  const here = atShaAlready(build.sha, refspecs);
  const skip = notice(`Commit ${build.sha.slice(0, 8)} is here already under the refs this job fetches: skipping the fetch`);
  return [
    `if [ -d ${shellQuote(`${options.projectDir}/.git`)} ]; then`,
    `cd ${shellQuote(options.projectDir)}`,
    fetchingNotice(options.depth),
    // At the commit already: the work tree is reset to it, which is the checkout.
    ...(here ? [`if ${here}; then`, skip, 'git reset --hard -q', `${AT_SHA}=1`, 'else', ...fetch, 'fi'] : fetch),
    'else',
    ...otherwise,
    'fi',
  ];
}

/**
 * A shell test that is true when the kept checkout's HEAD is `sha`, detached (as the last job's
 * checkout left it), and every ref `refspecs` fetch into names `sha` too: the commit is here, a fetch
 * would bring nothing the job asked for (a later job of the same pipeline in the same slot). Undefined
 * when a refspec has no single destination (a pattern, or none). HEAD is read by the shell's `read`,
 * and so are the refs while each is a loose file holding `sha` (as the last fetch wrote it: a loose ref
 * is what git reads before packed-refs); else one `git rev-parse` answers for all of them (packed
 * refs, annotated tags, another ref store).
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
