/**
 * E7 upload, E8 download, E9 delete of a build's artifacts (docs/protocol-v1.md §4.7–§4.9, §8.4). Uploads are
 * received by `upload.ts` (streamed to a temp file, 413 at the size limit, one `file` part).
 */
import { createReadStream } from 'node:fs';
import type { ServerContext } from '../context.js';
import { applyDotenvReport } from '../state/dotenv-report.js';
import { parseDurationSeconds } from '../../util/duration.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { buildPayload } from './payload.js';
import { liveArtifacts } from '../state/artifacts.js';
import type { BuildRecord } from '../state/store.js';
import { buildGate, buildTokenOf, readParams, type ApiRequest } from './request.js';
import { receiveUpload } from './upload.js';

function access(build: BuildRecord, token: string | undefined): Reply | undefined {
  if (token !== build.token) return errorReply(403);
  return undefined;
}

/** `expire_in` → expiry date; `null` for none/never; `undefined` when it is not a duration. */
export function expiryFrom(value: string | undefined, now = Date.now()): Date | null | undefined {
  if (value === undefined || value.trim() === '' || /^\s*never\s*$/i.test(value)) return null;
  const seconds = parseDurationSeconds(value);
  return seconds === undefined ? undefined : new Date(now + seconds * 1000);
}

export async function uploadArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const upfront = buildTokenOf(request);
  const check = (token: string | undefined): Reply | undefined =>
    access(build, token) ?? (build.status === 'running' ? undefined : errorReply(403, '403 Forbidden  - Build is not running!'));
  if (upfront !== undefined) {
    const refused = check(upfront);
    if (refused) return refused;
  }
  const type = request.req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(type)) return upfront === undefined ? errorReply(403) : errorReply(400, '400 Bad Request - expected a multipart/form-data body with a "file" part');
  return receiveUpload(ctx, request, build, upfront === undefined ? check : undefined, async (file) => {
    const expireIn = request.query.get('expire_in') ?? file.fields.expire_in;
    const expireAt = expiryFrom(expireIn);
    if (expireAt === undefined) return { reply: badExpiry(expireIn), keep: false };
    await ctx.artifacts.commit(build, file.tempPath, file.filename, file.size, expireAt);
    ctx.logger.info({ buildId: build.id, size: file.size }, 'artifacts stored');
    await applyDotenvReport(ctx, build);
    return { reply: json(201, buildPayload(ctx, build)), keep: true };
  });
}

/** 400 for an `expire_in` that is not a duration. */
export function badExpiry(expireIn: string | undefined): Reply {
  return errorReply(400, `400 Bad Request - expire_in "${expireIn}" is not a duration (try "1 week", "3 days", "2h20min")`);
}

export async function downloadArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const refused = access(build, buildTokenOf(request));
  if (refused) return refused;
  return artifactsFileReply(build);
}

/** The stored archive of `build` (E8 and the admin API), or 404 when it is absent or expired. */
export function artifactsFileReply(build: BuildRecord): Reply {
  const artifacts = liveArtifacts(build);
  if (!artifacts) return errorReply(404, '404 Not Found - no artifacts (absent or expired)');
  return {
    status: 200,
    headers: {
      'content-type': 'application/octet-stream',
      'content-disposition': contentDisposition(artifacts.filename),
      'content-transfer-encoding': 'binary',
      'content-length': String(artifacts.size),
    },
    body: createReadStream(artifacts.path),
  };
}

/**
 * `attachment; filename=NAME` as GitLab 8.x sent it for a name in printable ASCII; any other name (an
 * upload's, so the job's choice) also as RFC 6266's `filename*`, with `_` for the rest in `filename`:
 * a header carries no character beyond Latin-1, and one that tried would fail the download.
 */
function contentDisposition(name: string): string {
  if (/^[\x20-\x7e]*$/.test(name)) return `attachment; filename=${name}`;
  return `attachment; filename="${name.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export async function deleteArtifacts(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(404);
  const read = await readParams(ctx, request, buildGate(request, build.token));
  if (!read.ok) return read.reply;
  const refused = access(build, buildTokenOf(request, read.params));
  if (refused) return refused;
  // Only the build's own job deletes them: once it has finished, its token is every later job's (§5.5).
  if (build.status !== 'running') return errorReply(403, '403 Forbidden  - Build is not running!');
  await ctx.artifacts.remove(build);
  return json(200, {});
}
