/**
 * Stages `restore_cache` and `archive_cache` (docs/protocol-v1.md §9.1, §10.8): a local tar.gz per
 * `<cacheDir>/<runner>/<project>/<key>.tar.gz`. Cache problems never fail a job: a miss, a broken
 * or refused archive, or a failed write is a warning line. A cache file is written to a temp file
 * in the same directory and renamed over the old one, so a job restoring at the same time reads
 * either the old or the new archive, never half of one. `cache:policy` (an option key API v1 did not
 * have, sent by the reference server) makes a job only restore (`pull`) or only save (`push`).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { CacheOptions as CacheEntry } from '../protocol/types.js';
import type { ArtifactsContext } from './context.js';
import { createArchive } from './create.js';
import { extractArchive } from './extract.js';
import { cacheFilePath, megabytes } from './naming.js';
import { selectFiles } from './select.js';

export interface CacheOptions {
  cacheDir: string;
  runnerName: string;
  /** Already variable-expanded by the caller; 'default' when the job sets none. */
  key: string;
  /** Keys restored from, in order, when `key` has no cache yet (`cache:fallback_keys`, expanded). */
  fallbackKeys?: readonly string[];
  /** Which of the job's caches (a job may have several); default: its one cache. */
  spec?: CacheEntry;
}

/** The cache entry `opts` names: its own, else the build's only one. */
function entryOf(ctx: ArtifactsContext, opts: CacheOptions): CacheEntry | undefined {
  const cache = ctx.build.options.cache;
  return opts.spec ?? (Array.isArray(cache) ? cache[0] : cache);
}

/** Restores the cache over the project dir when the job configures one. Never throws, except the abort reason. */
export async function restoreCache(ctx: ArtifactsContext, opts: CacheOptions): Promise<void> {
  const spec = entryOf(ctx, opts);
  if (!cacheConfigured(spec)) return;
  if (spec?.policy === 'push') {
    ctx.log(`Not restoring cache ${JSON.stringify(opts.key)}: cache:policy is push`);
    return;
  }
  try {
    const found = await firstPresent(opts, ctx);
    if (!found) {
      ctx.log(`WARNING: no cache for key ${JSON.stringify(opts.key)} yet (a miss); the job runs without it`);
      return;
    }
    const { file, key } = found;
    if (key !== opts.key) ctx.log(`No cache for key ${JSON.stringify(opts.key)} yet; using the fallback key ${JSON.stringify(key)}`);
    ctx.log(`Restoring cache ${JSON.stringify(key)}...`);
    // A cache over the job's extract limit, or a disk that fills up, is a warning like any cache
    // problem (GitLab Runner's convention): nothing of it is left in the project, the job goes on.
    const summary = await extractArchive(file, ctx.projectDir, ctx.signal, ctx.extractBudget ? { budget: ctx.extractBudget } : {});
    ctx.log(`Restored cache ${JSON.stringify(key)}: ${summary.entries} entries, ${megabytes(summary.bytes)}`);
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    ctx.log(`WARNING: cache ${JSON.stringify(opts.key)} not restored: ${(error as Error).message}`);
  }
}

/** The archive of `key`, else of the first fallback key that has one. */
async function firstPresent(opts: CacheOptions, ctx: ArtifactsContext): Promise<{ file: string; key: string } | undefined> {
  for (const key of [opts.key, ...(opts.fallbackKeys ?? [])]) {
    const file = cacheFilePath(opts.cacheDir, opts.runnerName, ctx.build, key);
    if (await stat(file).then((stats) => stats.isFile(), () => false)) return { file, key };
  }
  return undefined;
}

/** Archives the cache paths (the caller decides when, per `cache:when`). Never throws, except the abort reason. */
export async function archiveCache(ctx: ArtifactsContext, opts: CacheOptions): Promise<void> {
  const spec = entryOf(ctx, opts) ?? {};
  if (!cacheConfigured(spec)) return;
  if (spec.policy === 'pull') {
    ctx.log(`Not saving cache ${JSON.stringify(opts.key)}: cache:policy is pull`);
    return;
  }
  let temp: string | undefined;
  try {
    const file = cacheFilePath(opts.cacheDir, opts.runnerName, ctx.build, opts.key);
    ctx.log(`Creating cache ${JSON.stringify(opts.key)}...`);
    const selection = await selectFiles(ctx.projectDir, { ...(spec.paths ? { paths: spec.paths } : {}), ...(spec.untracked ? { untracked: true } : {}) }, ctx.log, ctx.signal);
    if (selection.files === 0) {
      ctx.log('NOTICE: no files matched cache:paths or cache:untracked; the cache is not updated');
      return;
    }
    await mkdir(dirname(file), { recursive: true });
    temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const size = await createArchive(ctx.projectDir, selection.entries, temp, 'tar.gz', ctx.signal);
    await rename(temp, file);
    temp = undefined;
    ctx.log(`Created cache ${JSON.stringify(opts.key)}: ${selection.files} file(s), ${megabytes(selection.bytes)} (${megabytes(size)} compressed)`);
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    ctx.log(`WARNING: cache ${JSON.stringify(opts.key)} not saved: ${(error as Error).message}`);
  } finally {
    if (temp) await rm(temp, { force: true });
  }
}

function cacheConfigured(spec: CacheEntry | undefined): boolean {
  return spec !== undefined && ((spec.paths ?? []).length > 0 || spec.untracked === true);
}
