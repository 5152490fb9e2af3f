/**
 * `cache: key: files`: the key is computed once, when the pipeline is created, from the listed
 * files as they are at the pipeline's commit — a SHA-1 over their git blob ids, so the key changes
 * exactly when one of the files' content does — with `prefix` and a dash in front when given. When
 * none of the files exists at that commit the key is `default` (after the prefix), as in GitLab.
 * The runner then sees a plain `key`, which any runner understands.
 */
import { createHash } from 'node:crypto';
import { execa } from 'execa';
import type { JobSpec } from './spec.js';

/** The blob id of `file` at `sha`, or undefined when the file is not there. */
async function blobId(repoPath: string, sha: string, file: string, signal?: AbortSignal): Promise<string | undefined> {
  const result = await execa('git', ['-C', repoPath, 'rev-parse', '--verify', '--quiet', `${sha}:${file.replace(/^\.\//, '')}`], {
    reject: false,
    stdin: 'ignore',
    ...(signal === undefined ? {} : { cancelSignal: signal }),
  });
  signal?.throwIfAborted();
  return result.exitCode === 0 ? result.stdout.trim() : undefined;
}

/** The cache key for `files` at `sha`, with `prefix`. */
export async function cacheKeyFromFiles(repoPath: string, sha: string, files: readonly string[], prefix: string | undefined, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha1');
  let found = 0;
  for (const file of files) {
    const id = await blobId(repoPath, sha, file, signal);
    if (id === undefined) continue;
    hash.update(`${file}\0${id}\n`);
    found += 1;
  }
  const key = found === 0 ? 'default' : hash.digest('hex');
  return prefix === undefined ? key : `${prefix}-${key}`;
}

/** `files_commits:` — the last commit before `sha` that changed one of `files`; `default` when none did. */
export async function cacheKeyFromCommits(repoPath: string, sha: string, files: readonly string[], prefix: string | undefined, signal?: AbortSignal): Promise<string> {
  const paths = files.map((file) => file.replace(/^\.\//, ''));
  const result = await execa('git', ['-C', repoPath, 'log', '-1', '--format=%H', sha, '--', ...paths], {
    reject: false,
    stdin: 'ignore',
    ...(signal === undefined ? {} : { cancelSignal: signal }),
  });
  signal?.throwIfAborted();
  const key = result.exitCode === 0 && result.stdout.trim() !== '' ? result.stdout.trim() : 'default';
  return prefix === undefined ? key : `${prefix}-${key}`;
}

/** `jobs` with every `cache:key:files` turned into its key (the same files are hashed once). */
export async function resolveCacheKeys(jobs: readonly JobSpec[], repoPath: string, sha: string, signal?: AbortSignal): Promise<JobSpec[]> {
  const keys = new Map<string, Promise<string>>();
  return Promise.all(
    jobs.map(async (job) => {
      if (!job.cache?.some((cache) => cache.keyFiles)) return job;
      const cache = await Promise.all(
        job.cache.map(async (entry) => {
          const spec = entry.keyFiles;
          if (!spec) return entry;
          const id = JSON.stringify(spec);
          let key = keys.get(id);
          if (!key) {
            key = (spec.commits ? cacheKeyFromCommits : cacheKeyFromFiles)(repoPath, sha, spec.files, spec.prefix, signal);
            keys.set(id, key);
          }
          return { ...entry, key: await key };
        }),
      );
      return { ...job, cache };
    }),
  );
}
