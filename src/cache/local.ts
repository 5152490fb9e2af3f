/**
 * The local copy of a cache, where GitLab Runner 19 keeps it: `<cache_dir>/<project path>/<key>/cache.zip`
 * (the project's path from its repository URL, else `project-<id>`; the key may hold `/`), with
 * `metadata.json` beside it (`{"cachekey":"<key>"}`). It is the cache itself when no store is
 * configured, and the copy an upload is made from and a download lands in when one is: a runner
 * that switches from GitLab Runner (shell executor, same `cache_dir`) finds its caches.
 */
import { writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { projectSlug } from '../artifacts/naming.js';
import type { BuildPayload } from '../protocol/types.js';

export const ARCHIVE_NAME = 'cache.zip';
const METADATA_NAME = 'metadata.json';

/** The local archive of `key` (already sanitised) for `build`, or undefined if it would leave `cacheDir`. */
export function localCacheFile(cacheDir: string, build: BuildPayload, key: string): string | undefined {
  const file = join(cacheDir, projectSlug(build), key, ARCHIVE_NAME);
  const inside = relative(cacheDir, file);
  return inside.startsWith(`..${sep}`) || inside === '..' ? undefined : file;
}

/** Writes `metadata.json` beside `archive`: the metadata keys lower-cased, as GitLab Runner writes them. */
export async function writeCacheMetadata(archive: string, metadata: Readonly<Record<string, string>>): Promise<void> {
  const normalised = Object.fromEntries(Object.entries(metadata).filter(([name]) => name !== '').map(([name, value]) => [name.toLowerCase(), value]));
  await writeFile(join(dirname(archive), METADATA_NAME), JSON.stringify(normalised), { mode: 0o640 });
}
