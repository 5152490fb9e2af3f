/**
 * Stage `upload_artifacts` (docs/protocol-v1.md §4.7, §8.2, §9.3): per artifacts entry (v1 has one, v4 one
 * for the archive and one per report), select, archive to a file in the state dir, upload (E7/V10,
 * with the entry's type and format over v4). Each archive is built once; a retry re-reads it from
 * disk. Unlike the legacy runner, nothing is uploaded when nothing matched (§12 item 23).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiResult } from '../client/api-call.js';
import type { ArtifactUpload } from '../client/artifact-transfer.js';
import { retry, type Step } from '../client/retry.js';
import { worthRetrying } from '../client/retryable.js';
import type { ArtifactsContext } from './context.js';
import { createArchive } from './create.js';
import { ArtifactsError } from './errors.js';
import { artifactsFileName, artifactsOf, megabytes, shouldUpload } from './naming.js';
import type { ArtifactsOptions, BuildPayload } from '../protocol/types.js';
import { excludeEntries, selectFiles } from './select.js';

export interface UploadOptions {
  /** Archive format of an entry that names none (v1): tar.gz by default, zip when the runner has `artifacts_format = "zip"`. */
  format: 'tar.gz' | 'zip';
  /** Whether every earlier stage succeeded; with `artifacts.when` it decides whether to upload. */
  jobSucceeded: boolean;
  /** E7 attempts on retryable outcomes (5xx, network). Default 5 (the legacy runner made 3). */
  attempts?: number;
  /** First retry delay in ms (doubles, with jitter, up to 30 s). Default 1000. */
  retryBaseMs?: number;
  /** Expands the job's variables in `paths` and `exclude` (`$CI_PROJECT_DIR/out`, a matrix `${NAME}`), as GitLab Runner does. */
  expand?: (text: string) => string;
  /** `[runners.artifact]`: each upload's limit, and the time for the server's answer once it is sent. */
  timeouts?: { uploadMs: number; responseHeaderMs: number };
  /** Deflate level 0–9 (ARTIFACT_COMPRESSION_LEVEL); absent: zlib's default. */
  compressionLevel?: number;
}

/**
 * Uploads the job's artifacts as `options.artifacts` describes, entry by entry. Resolves when
 * uploaded or when there is nothing to upload. Throws (at the first entry that fails) ArtifactsError:
 * ARTIFACTS_TOO_LARGE (413), JOB_FORBIDDEN (403), ARTIFACTS_UPLOAD_FAILED, ARCHIVE_CREATE_FAILED; or
 * the abort reason.
 */
export async function uploadArtifacts(ctx: ArtifactsContext, opts: UploadOptions): Promise<void> {
  for (const spec of artifactsOf(ctx.build)) await uploadEntry({ ...ctx, job: ctx.build }, opts, spec);
}

/**
 * What uploading one artifacts entry needs: the job's context, and the job it is uploaded for (GitLab
 * Runner's `artifacts-uploader` knows the job by its id and token alone).
 */
export type EntryContext = Omit<ArtifactsContext, 'build'> & { job: Pick<BuildPayload, 'id' | 'token' | 'variables' | 'options'> };

/** Uploads one artifacts entry as uploadArtifacts does each; resolves when uploaded or when there is nothing to upload. */
export async function uploadEntry(ctx: EntryContext, opts: UploadOptions, spec: ArtifactsOptions): Promise<void> {
  if ((spec.paths ?? []).length === 0 && !spec.untracked) return;
  const type = spec.artifact_type && spec.artifact_type !== 'archive' ? spec.artifact_type : undefined;
  const what = type ? `artifacts (${type} report)` : 'artifacts';
  if (!shouldUpload(spec.when, opts.jobSucceeded)) {
    ctx.log(`Not uploading ${what}: the job ${opts.jobSucceeded ? 'succeeded' : 'failed'} and artifacts:when is ${spec.when ?? 'on_success'}`);
    return;
  }
  ctx.log(`Uploading ${what}...`);
  const expand = (list: string[] | undefined): string[] | undefined => (list && opts.expand ? list.map(opts.expand) : list);
  const paths = expand(spec.paths);
  const selected = await selectFiles(ctx.projectDir, { ...(paths ? { paths } : {}), ...(spec.untracked ? { untracked: true } : {}) }, ctx.log, ctx.signal);
  const { selection, excluded } = await excludeEntries(selected, expand(spec.exclude) ?? [], ctx.signal);
  if (excluded > 0) ctx.log(`Excluded ${excluded} file(s) matching artifacts:exclude`);
  if (selection.files === 0) {
    ctx.log(`NOTICE: no files matched ${type ? `the ${type} report's paths` : 'artifacts:paths or artifacts:untracked'}; nothing to upload`);
    return;
  }
  const format = spec.artifact_format ?? opts.format;
  const filename = artifactsFileName(ctx.job, format, spec, selection.entries.find((entry) => entry.kind === 'file')?.path);
  const archive = join(ctx.stateDir, `artifacts-upload.${format}`);
  await mkdir(ctx.stateDir, { recursive: true });
  try {
    const started = performance.now();
    const size = await createArchive(ctx.projectDir, selection.entries, archive, format, ctx.signal, opts.compressionLevel === undefined ? {} : { compressionLevel: opts.compressionLevel });
    ctx.log(`Archived ${selection.files} file(s), ${megabytes(selection.bytes)}, into ${filename} (${megabytes(size)}) in ${seconds(performance.now() - started)}`);
    const limits = opts.timeouts ? { timeoutMs: opts.timeouts.uploadMs, responseHeaderTimeoutMs: opts.timeouts.responseHeaderMs } : {};
    const upload = { path: archive, filename, ...limits, ...(spec.expire_in ? { expireIn: spec.expire_in } : {}), ...(spec.artifact_type ? { artifactType: spec.artifact_type } : {}), ...(spec.artifact_format ? { artifactFormat: spec.artifact_format } : {}) };
    await send(ctx, opts, upload, size);
  } finally {
    await rm(archive, { force: true });
  }
}

async function send(ctx: EntryContext, opts: UploadOptions, file: ArtifactUpload, size: number): Promise<void> {
  const { filename } = file;
  const attempts = Math.max(1, opts.attempts ?? 5);
  const upload = async (): Promise<Step<ApiResult, ApiResult>> => {
    const started = performance.now();
    const result = await ctx.client.uploadArtifacts(ctx.job.id, ctx.job.token, file, ctx.signal);
    if (result.outcome === 'ok') {
      const elapsed = performance.now() - started;
      ctx.log(`Uploaded ${filename}: ${megabytes(size)} in ${seconds(elapsed)} (${megabytes((size * 1000) / Math.max(elapsed, 1))}/s)`);
    }
    return worthRetrying(result) ? { failed: result, retryAfterMs: result.retryAfterMs } : { done: result };
  };
  const end = await retry(upload, {
    policy: { baseMs: opts.retryBaseMs ?? 1000, maxMs: 30_000, attempts },
    signal: ctx.signal,
    onRetry: (result, attempt, delay) => ctx.log(`WARNING: uploading artifacts failed (${reason(result)}); retrying in ${seconds(delay)} (attempt ${attempt + 1} of ${attempts})`),
  });
  const result = end.ok ? end.value : end.failure;
  if (result.outcome === 'ok') return;
  if (result.status === 413) {
    throw new ArtifactsError('ARTIFACTS_TOO_LARGE', `artifacts are ${megabytes(size)}, over the server's limit; archive fewer files or raise the server's maximum artifacts size`);
  }
  if (result.status === 403 || result.status === 401) {
    throw new ArtifactsError('JOB_FORBIDDEN', 'the job was stopped on the server (artifacts upload answered 403); it is no longer running there');
  }
  throw new ArtifactsError('ARTIFACTS_UPLOAD_FAILED', `uploading artifacts failed after ${end.attempts} attempt(s): ${reason(result)}; check the server's log`);
}

function reason(result: ApiResult): string {
  return result.status === -1 ? `network error: ${result.error?.message ?? 'unknown'}` : `HTTP ${result.status}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
