/**
 * The runner API route table (`/ci/api/v1`, docs/protocol-v1.md §1.1). A trailing `.json` is optional on
 * every route; build ids are any integer so that `PUT /builds/-1` reaches the token check (§4.3).
 */
import type { FaultEndpoint } from '../types.js';
import type { ServerContext } from '../context.js';
import type { Reply } from '../http/reply.js';
import { deleteArtifacts, downloadArtifacts, uploadArtifacts } from './artifacts.js';
import { requestBuild, updateBuild } from './builds.js';
import type { ApiRequest } from './request.js';
import { deleteRunner, registerRunner } from './runners.js';
import { patchTrace } from './trace.js';

export type RunnerHandler = (ctx: ServerContext, request: ApiRequest) => Promise<Reply>;

export interface Route {
  pattern: RegExp;
  methods: Partial<Record<string, { endpoint: Exclude<FaultEndpoint, '*' | 'git'>; handler: RunnerHandler }>>;
}

export const ID = '(-?\\d+)';

const ROUTES: Route[] = [
  { pattern: /^\/runners\/register$/, methods: { POST: { endpoint: 'register_runner', handler: registerRunner } } },
  {
    pattern: /^\/runners\/delete$/,
    // v1.11.5 sends DELETE; POST is accepted as an alias (§12 item 28).
    methods: { DELETE: { endpoint: 'delete_runner', handler: deleteRunner }, POST: { endpoint: 'delete_runner', handler: deleteRunner } },
  },
  { pattern: /^\/builds\/register$/, methods: { POST: { endpoint: 'request_build', handler: requestBuild } } },
  { pattern: new RegExp(`^/builds/${ID}$`), methods: { PUT: { endpoint: 'update_build', handler: updateBuild } } },
  { pattern: new RegExp(`^/builds/${ID}/trace\\.txt$`), methods: { PATCH: { endpoint: 'patch_trace', handler: patchTrace } } },
  {
    pattern: new RegExp(`^/builds/${ID}/artifacts$`),
    methods: {
      POST: { endpoint: 'upload_artifacts', handler: uploadArtifacts },
      GET: { endpoint: 'download_artifacts', handler: downloadArtifacts },
      DELETE: { endpoint: 'delete_artifacts', handler: deleteArtifacts },
    },
  },
];

export type RouteMatch =
  | { kind: 'found'; endpoint: Exclude<FaultEndpoint, '*' | 'git'>; handler: RunnerHandler; buildId: number | undefined }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' };

/** Matches `path` (relative to `/ci/api/v1`); a trailing `.json` is optional. */
export function matchRunnerRoute(method: string, path: string): RouteMatch {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  return matchRoute(ROUTES, method, trimmed.endsWith('.json') ? [trimmed.slice(0, -5), trimmed] : [trimmed]);
}

/** The first route of `routes` one of `candidates` matches (the id in its first group). */
export function matchRoute(routes: readonly Route[], method: string, candidates: readonly string[]): RouteMatch {
  for (const candidate of candidates) {
    for (const route of routes) {
      const match = route.pattern.exec(candidate);
      if (!match) continue;
      const entry = route.methods[method];
      if (!entry) return { kind: 'method', allow: Object.keys(route.methods) };
      const id = match[1] === undefined ? undefined : Number(match[1]);
      return { kind: 'found', endpoint: entry.endpoint, handler: entry.handler, buildId: id !== undefined && Number.isSafeInteger(id) ? id : undefined };
    }
  }
  return { kind: 'none' };
}
