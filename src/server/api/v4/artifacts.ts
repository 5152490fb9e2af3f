/**
 * V10 upload and V11 download of job artifacts (docs/protocol-v4.md §7), without Workhorse: a plain
 * multipart `file` part, `artifact_type`/`artifact_format`/`expire_in` in the query string. An
 * `archive` becomes the job's artifacts (what later jobs download); a `dotenv` report becomes
 * variables of the jobs that take this job's artifacts; every other report type of GitLab's is kept
 * and listed (`state/reports.ts`, JUnit read into test counts). Types outside GitLab's are refused.
 */
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { ServerContext } from '../../context.js';
import { errorReply, type Reply } from '../../http/reply.js';
import { DOTENV_MAX_BYTES, applyDotenvText } from '../../state/dotenv-report.js';
import { REPORT_TYPES, storeReport } from '../../state/reports.js';
import type { BuildRecord } from '../../state/store.js';
import { artifactsFileReply, badExpiry, expiryFrom } from '../artifacts.js';
import { receiveUpload, type ReceivedFile } from '../upload.js';
import type { ApiRequest } from '../request.js';
import { authenticateJob, jobTokenOf } from './auth.js';

const TYPES = ['archive', 'dotenv', ...REPORT_TYPES];
const FORMATS = ['zip', 'gzip', 'raw'];

function created(): Reply {
  return { status: 201, headers: { 'content-type': 'text/plain' }, body: '201' };
}

export async function uploadArtifactsV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const upfront = jobTokenOf(request);
  let build: BuildRecord | undefined;
  if (upfront !== undefined) {
    const auth = authenticateJob(ctx, request, upfront);
    if (!auth.ok) return auth.reply;
    build = auth.build;
  } else {
    build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
    if (!build) return errorReply(403);
  }
  const type = request.query.get('artifact_type') ?? 'archive';
  const format = request.query.get('artifact_format') ?? (type === 'archive' ? 'zip' : 'gzip');
  if (!TYPES.includes(type)) return errorReply(400, `400 Bad Request - artifact_type "${type}" is not accepted here (${TYPES.join(', ')}): this server's jobs ask for no other`);
  if (!FORMATS.includes(format)) return errorReply(400, `400 Bad Request - artifact_format "${format}" is not one of ${FORMATS.join(', ')}`);
  if (!/^multipart\/form-data/i.test(request.req.headers['content-type'] ?? '')) {
    return errorReply(400, '400 Bad Request - expected a multipart/form-data body with a "file" part');
  }
  const job = build;
  // Without a token up front, the form's `token` field is checked before any file byte is stored.
  const lateCheck = upfront === undefined ? (token: string | undefined): Reply | undefined => refusal(ctx, request, token) : undefined;
  return receiveUpload(ctx, request, job, lateCheck, async (file) => {
    const expireIn = request.query.get('expire_in') ?? file.fields.expire_in;
    const expireAt = expiryFrom(expireIn);
    if (expireAt === undefined) return { reply: badExpiry(expireIn), keep: false };
    if (type === 'dotenv') return { reply: await dotenvReport(ctx, job, file, format), keep: false };
    if (type !== 'archive') {
      await storeReport(ctx, job, type, file, format);
      ctx.logger.info({ buildId: job.id, type, size: file.size }, 'report stored');
      return { reply: created(), keep: true };
    }
    await ctx.artifacts.commit(job, file.tempPath, file.filename, file.size, expireAt);
    ctx.logger.info({ buildId: job.id, size: file.size, format }, 'artifacts stored');
    return { reply: created(), keep: true };
  });
}

function refusal(ctx: ServerContext, request: ApiRequest, token: string | undefined): Reply | undefined {
  const auth = authenticateJob(ctx, request, token);
  return auth.ok ? undefined : auth.reply;
}

/**
 * A report's upload (gzip members of at most `DOTENV_MAX_BYTES` of text, or the text) is never near
 * this size; a bigger one is refused unread, so a report costs the server no more memory than this.
 */
const DOTENV_UPLOAD_MAX_BYTES = 64 * 1024;

/** Reads an uploaded dotenv report into the job's variables; 400 saying why when it is refused. */
async function dotenvReport(ctx: ServerContext, build: BuildRecord, file: ReceivedFile, format: string): Promise<Reply> {
  try {
    if (file.size > DOTENV_UPLOAD_MAX_BYTES) throw new RangeError(`the upload is ${file.size} bytes`);
    const bytes = await readFile(file.tempPath);
    const gzipped = format === 'gzip' || (bytes[0] === 0x1f && bytes[1] === 0x8b);
    // Every gzip member (one per report file) in order; more than the limit is refused unread.
    const text = (gzipped ? gunzipSync(bytes, { maxOutputLength: DOTENV_MAX_BYTES + 1 }) : bytes).toString('utf8');
    applyDotenvText(ctx, build, text);
  } catch (error) {
    const reason = error instanceof RangeError ? `the report is over the limit of ${DOTENV_MAX_BYTES} bytes` : (error as Error).message;
    ctx.logger.warn({ buildId: build.id, reason }, 'dotenv report refused');
    return errorReply(400, `400 Bad Request - dotenv report refused: ${reason}`);
  }
  ctx.logger.info({ buildId: build.id, variables: build.dotenv?.length ?? 0 }, 'dotenv report stored');
  return created();
}

/**
 * The artifacts of the URL's job for a job token, as GitLab decides it: the token must be a running
 * job's (401 without one or with any other: a finished job's token is dead); that job reads the jobs
 * of its own project — its dependencies, whose entries in its payload carry its own token, and the
 * rest of the project — and no other project's (403), which only a job token allowlist could open
 * and this server keeps none. 403 for no such job, 404 when there are no (live) artifacts.
 */
export async function downloadArtifactsV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const token = jobTokenOf(request);
  if (token === undefined) return errorReply(401, '401 Unauthorized - send a job token in the JOB-TOKEN header');
  const reader = ctx.store.runningBuildByToken(token);
  if (!reader) return errorReply(401, '401 Unauthorized - the token is not the token of a running job');
  const build = request.buildId === undefined ? undefined : ctx.store.buildById(request.buildId);
  if (!build) return errorReply(403);
  if (build.projectId !== reader.projectId) {
    return errorReply(403, "403 Forbidden - a job token reads the jobs of its own project only (this server keeps no job token allowlist)");
  }
  return artifactsFileReply(build);
}
