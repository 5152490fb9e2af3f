/**
 * Who is calling, for API v4 (docs/protocol-v4.md §2): runner tokens in the JSON `token` (R19 also the
 * `RUNNER-TOKEN` header), job tokens in the JSON `token` (PUT), the `JOB-TOKEN` header or a `token`
 * parameter (trace, artifacts). A job is only answered while it runs: anything else is 403 with a
 * `Job-Status` header, never 404 (a 404 could come from any proxy; a runner stops a job on 403).
 */
import type { ServerContext } from '../../context.js';
import { stringParam, type Params } from '../../http/body.js';
import type { TokenGate } from '../../http/guarded-body.js';
import { errorReply, type Reply } from '../../http/reply.js';
import type { BuildRecord, RunnerRecord } from '../../state/store.js';
import { shownStatus } from '../../state/transitions.js';
import type { ApiRequest } from '../request.js';

function header(request: ApiRequest, name: string): string | undefined {
  const value = request.req.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

function nonEmpty(value: string | null): string | undefined {
  return value === null || value === '' ? undefined : value;
}

/** The runner token of a request: JSON/query `token`, else the `RUNNER-TOKEN` header. */
export function runnerTokenOf(request: ApiRequest, params: Params = {}): string | undefined {
  return stringParam(params, 'token') ?? nonEmpty(request.query.get('token')) ?? header(request, 'runner-token');
}

/** Accepts a runner token before the body is buffered when the query or a header carries it. */
export function runnerGateV4(ctx: ServerContext, request: ApiRequest): TokenGate {
  return {
    upfront: nonEmpty(request.query.get('token')) ?? header(request, 'runner-token'),
    check: (token) => (ctx.store.runnerByToken(token) ? undefined : errorReply(403)),
  };
}

/** The runner whose token the request carries, or undefined. */
export function callingRunner(ctx: ServerContext, request: ApiRequest, params: Params): RunnerRecord | undefined {
  return ctx.store.runnerByToken(runnerTokenOf(request, params));
}

/** The job token: a `token` parameter wins over the `JOB-TOKEN` header (§3). */
export function jobTokenOf(request: ApiRequest, params: Params = {}): string | undefined {
  return stringParam(params, 'token') ?? nonEmpty(request.query.get('token')) ?? header(request, 'job-token');
}

/** The status a runner is told in `Job-Status`: `canceling` while a graceful cancel runs. */
export const jobStatus = shownStatus;

export type JobAuth = { ok: true; build: BuildRecord } | { ok: false; reply: Reply };

/**
 * The job of the URL when `token` is its token and it is running (or canceling); else 403, with
 * `Job-Status` when the job exists and the token is right but it no longer runs.
 */
export function authenticateJob(ctx: ServerContext, request: ApiRequest, token: string | undefined): JobAuth {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build || token === undefined || token !== build.token) return { ok: false, reply: errorReply(403) };
  if (build.status !== 'running') {
    return { ok: false, reply: errorReply(403, '403 Forbidden - Job is not running', { 'job-status': jobStatus(build) }) };
  }
  return { ok: true, build };
}

/** Accepts the token of the URL's job before the body is buffered (PUT sends it in JSON). */
export function jobGate(ctx: ServerContext, request: ApiRequest): TokenGate {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  return {
    upfront: jobTokenOf(request),
    check: (token) => (build && token === build.token ? undefined : errorReply(403)),
  };
}

/** `X-GitLab-Trace-Update-Interval`: how often the runner should send its trace and keep-alives. */
export function updateIntervalHeader(ctx: ServerContext): Record<string, string> {
  return { 'x-gitlab-trace-update-interval': String(ctx.settings.traceUpdateIntervalS) };
}
