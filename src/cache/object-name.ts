/**
 * Where a cache sits in the store, as GitLab Runner 19 names it (`cache.GetAdapter`):
 * `[<Path>/][runner/<short token>/]project/<project id>/<key>`, the `runner/…` part only when the
 * cache is not `Shared`; with FF_HASH_CACHE_KEYS the key is its hash and a directory of the hash's first
 * two hex digits comes before it (`…/project/<id>/ab/ab12…`). Joined and cleaned as a URL path, like Go's `path.Join`; a name that would
 * not stay below `…/project/<id>/` is refused (the key was sanitised already, this is the second lock).
 */
import { posix } from 'node:path';

export interface ObjectNaming {
  /** `[runners.cache] Path`. */
  path: string;
  /** `[runners.cache] Shared`. */
  shared: boolean;
  /** The runner's short token (util/short-token.ts). */
  shortToken: string;
}

/** The object name of `key` for project `projectId`, or undefined when it would leave the project's part. */
export function cacheObjectName(naming: ObjectNaming, projectId: number, key: string, sharded = false): string | undefined {
  if (key === '' || (sharded && key.length < 2)) return undefined;
  const namespace = naming.shared ? '' : posix.join('runner', naming.shortToken);
  const base = posix.join(naming.path, namespace, 'project', String(projectId));
  const full = sharded ? posix.join(base, key.slice(0, 2), key) : posix.join(base, key);
  if (!full.startsWith(`${base}/`)) return undefined;
  // The store's name has no leading slash (GitLab Runner's adapters trim it).
  return full.replace(/^\/+/, '');
}
