/**
 * E6: append a part to a build's trace (docs/protocol-v1.md §4.6, §7.7, §12 items 3, 4, 7). Order of checks:
 * unknown build 404, bad token 403, a build that ended other than canceled 403, missing/malformed
 * Content-Range 400, a trace past `MAX_TRACE_BYTES_V1` 403 (a running build fails), start ≠ stored length
 * 416 (with `Range`), else append and 202 with `Range` and `Build-Status`. A canceled build still takes
 * the parts its runner had in flight and says `Build-Status: canceled`; a finished build's token, which
 * every later job of the pipeline holds (`depends_on_builds`), appends nothing.
 */
import type { ServerContext } from '../context.js';
import { readBudgetedBody } from '../http/guarded-body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { MAX_TRACE_BYTES_V1 } from '../state/traces.js';
import { finishBuild } from '../state/transitions.js';
import { secretsOf } from './builds.js';
import { buildTokenOf, TRACE_BODY_LIMIT, type ApiRequest } from './request.js';

/** `<start>-<end>` in decimal bytes; `undefined` when malformed. */
export function parseContentRange(value: string | undefined): { start: number; end: number } | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)-(\d+)$/.exec(value.trim());
  if (!match) return undefined;
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return undefined;
  return { start, end };
}

export async function patchTrace(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  if (buildTokenOf(request) !== build.token) return errorReply(403);
  if (build.status !== 'running' && build.status !== 'canceled') return errorReply(403, '403 Forbidden - Build has finished', { 'build-status': build.status });
  const header = request.req.headers['content-range'];
  if (header === undefined) return errorReply(400, '400 Missing header Content-Range');
  const range = parseContentRange(header);
  if (!range) return errorReply(400, `400 Bad Request - malformed Content-Range "${header}"; expected <start>-<end>`);
  const body = await readBudgetedBody(request.req, TRACE_BODY_LIMIT, ctx.bodies.main, request.signal);
  if (range.end - range.start !== body.byteLength) {
    ctx.logger.debug({ buildId: build.id, range, bytes: body.byteLength }, 'Content-Range end does not match the body length');
  }
  if (build.status === 'running') build.lastActivityAt = Date.now();
  if (range.start + body.byteLength > MAX_TRACE_BYTES_V1) {
    finishBuild(ctx, build, 'failed', 'trace too large', { failureReason: 'trace_size_exceeded' });
    return errorReply(403, `403 Forbidden - the build log exceeded ${MAX_TRACE_BYTES_V1} bytes`, { 'build-status': build.status });
  }
  const result = await ctx.traces.append(build, range.start, body, secretsOf(ctx, build.token, build.projectId));
  if (!result.ok) {
    return errorReply(416, undefined, { range: `0-${result.length}` });
  }
  // The interval is API v4's header; v1 runners that know it pace their keep-alives by it.
  return json(202, {}, { 'build-status': build.status, range: `0-${result.length}`, 'x-gitlab-trace-update-interval': String(ctx.settings.traceUpdateIntervalS) });
}
