/**
 * The files of one commit of a project's repository, read with git (never a work tree): what
 * `include: local`, `rules: exists` and `rules: changes` see.
 */
import { execa } from 'execa';
import type { CommitFiles } from '../../pipeline/context.js';
import { resolveRef } from './refs.js';

/** Included files larger than this are refused by git's reader rather than held in memory. */
const MAX_FILE_BYTES = 4 * 1024 * 1024;
/** A listing of paths for a huge repository stays bounded. */
const MAX_LISTING_BYTES = 64 * 1024 * 1024;

async function git(repoPath: string, args: string[], signal: AbortSignal | undefined, maxBuffer: number): Promise<{ ok: boolean; stdout: string }> {
  const result = await execa('git', ['-C', repoPath, ...args], {
    reject: false,
    stdin: 'ignore',
    maxBuffer,
    ...(signal === undefined ? {} : { cancelSignal: signal }),
  });
  signal?.throwIfAborted();
  if (result.isMaxBuffer) throw new Error(`git ${args[0] ?? ''} in ${repoPath} printed more than ${maxBuffer} bytes`);
  return { ok: result.exitCode === 0, stdout: result.stdout };
}

const splitZ = (text: string): string[] => text.split('\0').filter((path) => path !== '');

/** The files of commit `sha` in the repository at `repoPath`; answers are cached. */
export function gitCommitFiles(repoPath: string, sha: string, signal?: AbortSignal): CommitFiles {
  let listing: Promise<readonly string[]> | undefined;
  return {
    paths() {
      listing ??= git(repoPath, ['ls-tree', '-r', '-z', '--name-only', '--full-tree', sha], signal, MAX_LISTING_BYTES).then((result) => {
        if (!result.ok) throw new Error(`cannot list the files of ${sha} in ${repoPath}`);
        return splitZ(result.stdout);
      });
      return listing;
    },
    async read(path) {
      const result = await git(repoPath, ['cat-file', 'blob', `${sha}:${path}`], signal, MAX_FILE_BYTES);
      return result.ok ? result.stdout : undefined;
    },
    async changedSince(base) {
      let baseSha: string;
      try {
        baseSha = (await resolveRef(repoPath, base, signal)).sha;
      } catch {
        return undefined;
      }
      const result = await git(repoPath, ['diff', '--name-only', '-z', '--no-renames', baseSha, sha], signal, MAX_LISTING_BYTES);
      return result.ok ? splitZ(result.stdout) : undefined;
    },
  };
}

/** The message of commit `sha` (`CI_COMMIT_MESSAGE`), or undefined when git cannot tell. */
export async function commitMessage(repoPath: string, sha: string, signal?: AbortSignal): Promise<string | undefined> {
  const result = await git(repoPath, ['log', '-1', '--format=%B', sha], signal, MAX_FILE_BYTES);
  return result.ok ? result.stdout.replace(/\n+$/, '') : undefined;
}
