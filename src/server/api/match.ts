/** Which runner API a path is under (`/ci/api/v1` or `/api/v4`) and which of its routes it matches. */
import { matchRunnerRoute, type RouteMatch } from './routes.js';
import { matchV4Route } from './v4/routes.js';

export type RunnerApiVersion = 'v1' | 'v4';

const PREFIXES: ReadonlyArray<[RunnerApiVersion, string]> = [
  ['v1', '/ci/api/v1'],
  ['v4', '/api/v4'],
];

/** The API and route of `path`, or undefined when it is under neither API. */
export function matchApiPath(method: string, path: string): { api: RunnerApiVersion; match: RouteMatch } | undefined {
  for (const [api, prefix] of PREFIXES) {
    if (path !== prefix && !path.startsWith(`${prefix}/`)) continue;
    const rest = path.slice(prefix.length);
    return { api, match: api === 'v1' ? matchRunnerRoute(method, rest) : matchV4Route(method, rest) };
  }
  return undefined;
}
