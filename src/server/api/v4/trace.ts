/**
 * V8 `PATCH /jobs/:id/trace` (docs/protocol-v4.md §6): the job token in `JOB-TOKEN` (or `token`), a
 * `Content-Range: <start>-<last>` whose `last` is inclusive and is not used (the body's length is),
 * 416 with `Range: 0-<stored>` when `start` is not the stored length, else 202 with the new
 * `Range: 0-<stored>` (exclusive: a byte count), `Job-Status` and `X-GitLab-Trace-Update-Interval`.
 */
import type { ServerContext } from '../../context.js';
import { readBudgetedBody } from '../../http/guarded-body.js';
import { json, type Reply } from '../../http/reply.js';
import { MAX_TRACE_BYTES } from '../../state/traces.js';
import { finishBuild } from '../../state/transitions.js';
import { secretsOf } from '../builds.js';
import { TRACE_BODY_LIMIT, type ApiRequest } from '../request.js';
import { authenticateJob, jobStatus, jobTokenOf, updateIntervalHeader } from './auth.js';

function plainError(status: number, message: string, headers: Record<string, string> = {}): Reply {
  return json(status, { error: message }, headers);
}

export async function patchTraceV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const auth = authenticateJob(ctx, request, jobTokenOf(request));
  if (!auth.ok) return auth.reply;
  const { build } = auth;
  const header = request.req.headers['content-range'];
  if (header === undefined) return plainError(400, '400 Missing header Content-Range');
  const match = /^(\d+)-(\d+)$/.exec(header.trim());
  const start = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(start)) return plainError(400, `400 Bad Request - malformed Content-Range "${header}"; expected <start>-<last>`);
  const body = await readBudgetedBody(request.req, TRACE_BODY_LIMIT, ctx.bodies.main, request.signal);
  build.lastActivityAt = Date.now();
  if (start + body.byteLength > MAX_TRACE_BYTES) {
    finishBuild(ctx, build, 'failed', 'trace too large', { failureReason: 'trace_size_exceeded' });
    return json(403, { message: `403 Forbidden - the job log exceeded ${MAX_TRACE_BYTES} bytes` }, { 'job-status': jobStatus(build) });
  }
  const result = await ctx.traces.append(build, start, body, secretsOf(ctx, build.token, build.projectId));
  if (!result.ok) return plainError(416, '416 Range Not Satisfiable', { range: `0-${result.length}` });
  return { status: 202, headers: { 'job-status': jobStatus(build), range: `0-${result.length}`, ...updateIntervalHeader(ctx) } };
}
