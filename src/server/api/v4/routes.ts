/**
 * The API v4 route table (docs/protocol-v4.md §1), paths relative to `/api/v4`. Fault rules name the same
 * endpoints as v1's where the two do the same thing (`request_build`, `update_build`, `patch_trace`,
 * …), so one `--fault` flag covers a runner on either API.
 */
import { errorReply } from '../../http/reply.js';
import { ID, matchRoute, type Route, type RouteMatch } from '../routes.js';
import { downloadArtifactsV4, uploadArtifactsV4 } from './artifacts.js';
import { updateJob } from './jobs.js';
import { requestJob } from './request.js';
import { deleteManagerV4, deleteRunnerV4, registerRunnerV4, resetTokenByIdV4, resetTokenV4, verifyRunnerV4 } from './runners.js';
import { patchTraceV4 } from './trace.js';

/** Workhorse's own call (V9): refused without Workhorse's signature, which this server never has. */
const workhorseOnly = async () => errorReply(403, '403 Forbidden - this endpoint is for GitLab Workhorse; upload to /jobs/:id/artifacts');

const ROUTES: Route[] = [
  { pattern: /^\/runners$/, methods: { POST: { endpoint: 'register_runner', handler: registerRunnerV4 }, DELETE: { endpoint: 'delete_runner', handler: deleteRunnerV4 } } },
  { pattern: /^\/runners\/managers$/, methods: { DELETE: { endpoint: 'delete_runner_manager', handler: deleteManagerV4 } } },
  { pattern: /^\/runners\/verify$/, methods: { POST: { endpoint: 'verify_runner', handler: verifyRunnerV4 } } },
  { pattern: /^\/runners\/reset_authentication_token$/, methods: { POST: { endpoint: 'reset_runner_token', handler: resetTokenV4 } } },
  { pattern: new RegExp(`^/runners/${ID}/reset_authentication_token$`), methods: { POST: { endpoint: 'reset_runner_token', handler: resetTokenByIdV4 } } },
  { pattern: /^\/jobs\/request$/, methods: { POST: { endpoint: 'request_build', handler: requestJob } } },
  { pattern: new RegExp(`^/jobs/${ID}$`), methods: { PUT: { endpoint: 'update_build', handler: updateJob } } },
  { pattern: new RegExp(`^/jobs/${ID}/trace$`), methods: { PATCH: { endpoint: 'patch_trace', handler: patchTraceV4 } } },
  {
    pattern: new RegExp(`^/jobs/${ID}/artifacts$`),
    methods: { POST: { endpoint: 'upload_artifacts', handler: uploadArtifactsV4 }, GET: { endpoint: 'download_artifacts', handler: downloadArtifactsV4 } },
  },
  { pattern: new RegExp(`^/jobs/${ID}/artifacts/authorize$`), methods: { POST: { endpoint: 'upload_artifacts', handler: workhorseOnly } } },
];

/** Matches `path` (relative to `/api/v4`). */
export function matchV4Route(method: string, path: string): RouteMatch {
  return matchRoute(ROUTES, method, [path.length > 1 ? path.replace(/\/+$/, '') : path]);
}
