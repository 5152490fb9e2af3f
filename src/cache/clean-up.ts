/**
 * FF_CLEAN_UP_FAILED_CACHE_EXTRACT, as GitLab Runner 19 does it (`shells/abstract.go`): when a cache
 * fails to extract (a missing one included), each of the cache's `paths` is removed from the project
 * dir (`Removing <path>`), so the job does not go on with half a cache; the next fallback key starts
 * clean. A path is taken literally, as GitLab Runner's quoted `rm -r -f` takes it (no glob, no
 * variable). The paths come from the job: one that leaves the project dir, or goes through a symlink
 * out of it, is not touched (a warning says so).
 */
import { realpath, rm } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { CacheContext } from './job.js';

export async function removeCachePaths(ctx: CacheContext, paths: readonly string[]): Promise<void> {
  const root = await realpath(ctx.projectDir).catch(() => ctx.projectDir);
  for (const path of paths) {
    if (path === '') continue;
    ctx.log(`Removing ${path}`);
    const full = resolve(ctx.projectDir, path);
    if (!below(ctx.projectDir, full)) {
      ctx.log(`WARNING: ${path} is not removed: it is not below the project directory`);
      continue;
    }
    const parent = await realpath(dirname(full)).catch(() => undefined);
    if (parent === undefined) continue; // Nothing there to remove.
    if (parent !== root && !below(root, parent)) {
      ctx.log(`WARNING: ${path} is not removed: it is outside the project directory`);
      continue;
    }
    await rm(full, { recursive: true, force: true }).catch((error: unknown) => ctx.log(`WARNING: removing ${path} failed: ${(error as Error).message}`));
  }
}

/** `path` is strictly below `root`. */
function below(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
