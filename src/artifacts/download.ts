/**
 * Stage `download_artifacts` (docs/protocol-v1.md §4.8, §5.5, §8.3): for every dependency build with an
 * artifacts file (filtered by `options.dependencies`: absent = all, [] = none), download it with E8
 * and that build's token into the state dir, check its size, and extract it safely over the project
 * dir. The format is told by magic bytes, so legacy zip artifacts work as well as our tar.gz.
 */
import { mkdir, realpath, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { retry, type Step } from '../client/retry.js';
import { worthRetrying } from '../client/retryable.js';
import type { DependencyBuild } from '../protocol/types.js';
import type { ArtifactsContext } from './context.js';
import { diskFull, diskFullCode } from './disk-full.js';
import { ArtifactsError } from './errors.js';
import { extractArchive, refusal } from './extract.js';
import { dependenciesToDownload, megabytes } from './naming.js';
import { StreamValidator, type ValidatedArchive } from './validate-stream.js';

export interface DownloadOptions {
  /** ARTIFACT_DOWNLOAD_ATTEMPTS (1–10): tries per dependency on retryable outcomes and size mismatches. */
  attempts: number;
  /** First retry delay in ms (doubles, with jitter, up to 30 s). Default 1000. */
  retryBaseMs?: number;
}

/**
 * Downloads and extracts every dependency's artifacts, in `depends_on_builds` order. Throws
 * ArtifactsError: ARTIFACTS_DOWNLOAD_FAILED, ARCHIVE_UNSAFE or ARCHIVE_OVER_LIMIT (nothing of that
 * archive written), ARCHIVE_CORRUPT, ARCHIVE_EXTRACT_FAILED, DISK_FULL (what was written removed);
 * or the abort reason. The downloaded file is removed whatever happens.
 */
export async function downloadArtifacts(ctx: ArtifactsContext, opts: DownloadOptions): Promise<void> {
  const deps = dependenciesToDownload(ctx.build.depends_on_builds, ctx.build.options.dependencies);
  for (const dep of deps) await downloadDependency(ctx, dep, opts);
}

/** What downloading one job's artifacts needs: the job's context without the job (GitLab Runner's `artifacts-downloader` has none). */
export type DependencyContext = Omit<ArtifactsContext, 'build'>;

/** The job whose artifacts are downloaded: its id and token, a name for messages, the size its payload announced. */
export type ArtifactsSource = Pick<DependencyBuild, 'id' | 'token' | 'name' | 'artifacts_file'>;

/**
 * Downloads `dep`'s artifacts (with its token) into the state dir and extracts them over the project
 * dir, as downloadArtifacts does for each dependency. Throws as it does.
 */
export async function downloadDependency(ctx: DependencyContext, dep: ArtifactsSource, opts: DownloadOptions): Promise<void> {
  await mkdir(ctx.stateDir, { recursive: true });
  const file = join(ctx.stateDir, `artifacts-download-${dep.id}`);
  try {
    ctx.log(`Downloading artifacts for ${dep.name} (${dep.id})...`);
    const started = performance.now();
    const { size, validated } = await fetchWithRetries(ctx, dep, file, opts).catch((error: unknown) => {
      throw aboutDependency(dep, error);
    });
    const elapsed = performance.now() - started;
    ctx.log(`Downloaded ${megabytes(size)} in ${(elapsed / 1000).toFixed(1)} s (${megabytes((size * 1000) / Math.max(elapsed, 1))}/s)`);
    let summary;
    try {
      summary = await extractArchive(file, ctx.projectDir, ctx.signal, { ...(validated ? { validated } : {}), ...(ctx.extractBudget ? { budget: ctx.extractBudget } : {}) });
    } catch (error) {
      throw aboutDependency(dep, error);
    }
    ctx.log(`Extracted ${summary.entries} entries (${megabytes(summary.bytes)}, ${summary.format}) from the artifacts of ${dep.name}`);
  } finally {
    await rm(file, { force: true });
  }
}

/** Names the dependency in an archive error (download errors name it already). */
function aboutDependency(dep: ArtifactsSource, error: unknown): unknown {
  if (error instanceof ArtifactsError && (error.code.startsWith('ARCHIVE_') || error.code === 'DISK_FULL')) {
    return new ArtifactsError(error.code, `artifacts of ${dep.name} (${dep.id}): ${error.message}`, { cause: error });
  }
  return error;
}

/**
 * Downloads into `file`, validating the archive on the way (see validate-stream.ts): each attempt
 * gets a fresh validator fed exactly the bytes that attempt writes. An unsafe, oversized or
 * unreadable archive is not retried — the server sent those bytes, and would send them again —
 * and neither is a full disk.
 */
async function fetchWithRetries(ctx: DependencyContext, dep: ArtifactsSource, file: string, opts: DownloadOptions): Promise<{ size: number; validated: ValidatedArchive | undefined }> {
  const attempts = Math.min(10, Math.max(1, Math.floor(opts.attempts)));
  const expected = dep.artifacts_file?.size;
  await mkdir(ctx.projectDir, { recursive: true });
  const root = await realpath(ctx.projectDir);
  const download = async (): Promise<Step<{ size: number; validated: ValidatedArchive | undefined }, string>> => {
    await rm(file, { force: true });
    const validator = new StreamValidator({ root, lexicalRoot: resolve(ctx.projectDir), file, ...(ctx.extractBudget ? { budget: ctx.extractBudget } : {}) });
    let invalid: { error: unknown } | undefined;
    const onChunk = (chunk: Buffer): void => {
      try {
        validator.write(chunk);
      } catch (error) {
        invalid = { error };
        throw error;
      }
    };
    const result = await ctx.client.downloadArtifacts(dep.id, dep.token, file, ctx.signal, expected === undefined ? { onChunk } : { maxBytes: expected, onChunk });
    if (invalid) throw refusal(invalid.error);
    const full = diskFullCode(result.error);
    if (full) throw diskFull(full, 'downloading', file, 'the partial download is removed', result.error);
    if (result.outcome === 'ok') {
      const size = (await stat(file)).size;
      if (expected !== undefined && size !== expected) return { failed: `got ${size} bytes, the server announced ${expected}` };
      try {
        return { done: { size, validated: await validator.finish() } };
      } catch (error) {
        throw refusal(error);
      }
    }
    const reason = result.status === -1 ? `network error: ${result.error?.message ?? 'unknown'}` : `HTTP ${result.status}`;
    if (result.outcome === 'final') {
      const why = result.status === 404 ? 'they are gone (expired or never stored)' : 'the server refused the dependency build token';
      throw new ArtifactsError('ARTIFACTS_DOWNLOAD_FAILED', `downloading artifacts of ${dep.name} (${dep.id}) failed with ${reason}: ${why}`);
    }
    if (!worthRetrying(result)) throw new ArtifactsError('ARTIFACTS_DOWNLOAD_FAILED', `downloading artifacts of ${dep.name} (${dep.id}) failed with ${reason}`);
    return { failed: reason, retryAfterMs: result.retryAfterMs };
  };
  const end = await retry(download, {
    policy: { baseMs: opts.retryBaseMs ?? 1000, maxMs: 30_000, attempts },
    signal: ctx.signal,
    onRetry: (reason, attempt, delay) =>
      ctx.log(`WARNING: downloading artifacts of ${dep.name} failed (${reason}); retrying in ${(delay / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${attempts})`),
  });
  if (end.ok) return end.value;
  throw new ArtifactsError('ARTIFACTS_DOWNLOAD_FAILED', `downloading artifacts of ${dep.name} (${dep.id}) failed after ${end.attempts} attempt(s): ${end.failure}; raise ARTIFACT_DOWNLOAD_ATTEMPTS or check the server`);
}
