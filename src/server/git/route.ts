/**
 * Which git smart-HTTP request a URL path is, if any. Pure. The project name is only a lookup key (the
 * repository's location on disk comes from the server's project table), and the part after `.git/` must
 * be one of the three smart-protocol endpoints or Git LFS's (`info/lfs/objects/batch`, and an object
 * by its SHA-256 name), so no URL can reach a file outside a repository.
 */

export type GitEndpoint = 'info/refs' | 'git-upload-pack' | 'git-receive-pack';

export type GitRoute =
  /** Not a `/{namespace}/{project}.git…` path: the caller routes it elsewhere. */
  | { kind: 'other' }
  /** Under `/{namespace}/{project}.git` but nothing we serve (dumb HTTP, bad names): 404. */
  | { kind: 'not-found' }
  | { kind: 'git'; project: string; endpoint: GitEndpoint }
  /** Git LFS: the batch API, or one object's content (`oid`: 64 hex digits). */
  | { kind: 'lfs'; project: string; oid?: string };

const ENDPOINTS: readonly GitEndpoint[] = ['info/refs', 'git-upload-pack', 'git-receive-pack'];

/** A namespace or project name: no separators, no dot segments, nothing a shell or a path could misread. */
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * Classifies `pathname` (as in the request URL, percent-encoding allowed). `/group/app.git/info/refs`
 * → `{ kind: 'git', project: 'group/app', endpoint: 'info/refs' }`.
 */
export function routeGitPath(pathname: string): GitRoute {
  const rawSegments = pathname.split('/');
  if (rawSegments.length < 3 || rawSegments[0] !== '') return { kind: 'other' };
  const segments: string[] = [];
  for (const raw of rawSegments) {
    try {
      segments.push(decodeURIComponent(raw));
    } catch {
      return { kind: 'other' };
    }
  }
  const [, namespace = '', repo = '', ...rest] = segments;
  if (!repo.endsWith('.git')) return { kind: 'other' };
  const project = repo.slice(0, -'.git'.length);
  if (!NAME.test(namespace) || !NAME.test(project) || project.endsWith('.')) return { kind: 'not-found' };
  const tail = rest.join('/');
  if (tail === 'info/lfs/objects/batch') return { kind: 'lfs', project: `${namespace}/${project}` };
  const object = /^info\/lfs\/objects\/([0-9a-f]{64})$/.exec(tail);
  if (object) return { kind: 'lfs', project: `${namespace}/${project}`, oid: object[1]! };
  const endpoint = ENDPOINTS.find((candidate) => candidate === tail);
  if (endpoint === undefined) return { kind: 'not-found' };
  return { kind: 'git', project: `${namespace}/${project}`, endpoint };
}
