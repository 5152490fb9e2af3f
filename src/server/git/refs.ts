/**
 * Turning the `ref` of a pipeline request into what the build payload carries (`sha`, `tag`,
 * `before_sha`), by asking git in the project's repository.
 */
import { execa } from 'execa';
import { CiRunnerError } from '../../util/errors.js';

export const ZERO_SHA = '0'.repeat(40);

const FULL_SHA = /^[0-9a-f]{40}$/;

/** Runs `git -C repo <args>`; stdout trimmed, or undefined when git exits non-zero. */
async function gitOutput(repoPath: string, args: string[], signal?: AbortSignal): Promise<string | undefined> {
  const result = await execa('git', ['-C', repoPath, ...args], {
    reject: false,
    stdin: 'ignore',
    ...(signal === undefined ? {} : { cancelSignal: signal }),
  });
  signal?.throwIfAborted();
  return result.exitCode === 0 ? result.stdout.trim() : undefined;
}

/** The commit `name` peels to, if it exists. `--end-of-options` keeps a name like `--all` from being an option. */
function commitOf(repoPath: string, name: string, signal?: AbortSignal): Promise<string | undefined> {
  return gitOutput(repoPath, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${name}^{commit}`], signal);
}

/**
 * Resolves a branch name, tag name, full ref (`refs/heads/…`, `refs/tags/…`) or full 40-hex sha to a
 * commit. A branch wins over a tag of the same name, as in GitLab. Throws `CiRunnerError` code
 * `REF_NOT_FOUND` when nothing matches.
 */
export async function resolveRef(
  repoPath: string,
  ref: string,
  signal?: AbortSignal,
): Promise<{ sha: string; tag: boolean }> {
  const candidates: Array<{ name: string; tag: boolean }> = [];
  if (ref.startsWith('refs/tags/')) candidates.push({ name: ref, tag: true });
  else if (ref.startsWith('refs/heads/')) candidates.push({ name: ref, tag: false });
  else if (ref !== '' && !ref.startsWith('-')) {
    candidates.push({ name: `refs/heads/${ref}`, tag: false }, { name: `refs/tags/${ref}`, tag: true });
    if (FULL_SHA.test(ref)) candidates.push({ name: ref, tag: false });
  }
  for (const candidate of candidates) {
    const sha = await commitOf(repoPath, candidate.name, signal);
    if (sha !== undefined && FULL_SHA.test(sha)) return { sha, tag: candidate.tag };
  }
  throw new CiRunnerError(
    'REF_NOT_FOUND',
    `ref '${ref}' is not a branch, tag or commit of the repository at ${repoPath}; push it or pick an existing one`,
  );
}

/**
 * The commit before `sha` for `before_sha`: its first parent, or 40 zeros for a root commit (what
 * GitLab sends when there is no previous commit). Throws `REF_NOT_FOUND` when `sha` is not a commit.
 */
export async function previousSha(repoPath: string, sha: string, signal?: AbortSignal): Promise<string> {
  const line = FULL_SHA.test(sha) ? await gitOutput(repoPath, ['rev-list', '--parents', '-n', '1', sha], signal) : undefined;
  if (line === undefined) {
    throw new CiRunnerError('REF_NOT_FOUND', `commit ${sha} is not in the repository at ${repoPath}`);
  }
  return line.split(' ')[1] ?? ZERO_SHA;
}

/** The branch HEAD points at (`main`), for pipelines created without a ref; undefined when HEAD is detached. */
export async function defaultBranch(repoPath: string, signal?: AbortSignal): Promise<string | undefined> {
  // Not `--short`: it turns `main` into `heads/main` when a tag `main` exists too.
  const name = await gitOutput(repoPath, ['symbolic-ref', '--quiet', 'HEAD'], signal);
  return name?.startsWith('refs/heads/') === true ? name.slice('refs/heads/'.length) : undefined;
}
