/**
 * Stage `restore_cache` for one of a job's caches, as GitLab Runner 19's cache-extractor runs it:
 * for the key, then each fallback key, `Checking cache for <key>...`; with a store the object is
 * fetched into the local copy (unless that copy is as recent), a 404 being "file does not exist";
 * then the local archive is extracted over the project dir with the checks downloaded artifacts get
 * (artifacts/extract.ts: the whole archive refused if one entry would leave the project or enter its
 * `.git`, the job's `artifacts_extract_limit` applied, nothing left of a failed extraction). The
 * first key that extracts ends it (`Successfully extracted cache`); any problem is a warning and the
 * next key is tried (`Failed to extract cache`; with FF_CLEAN_UP_FAILED_CACHE_EXTRACT the cache's paths
 * are removed first, clean-up.ts). A cache never fails the job, except a `policy` that
 * is none of GitLab's (CACHE_POLICY_UNKNOWN), as in GitLab Runner.
 *
 * RESTORE_CACHE_ATTEMPTS (`attempts`): GitLab Runner tries the restore_cache stage again when its
 * script fails; here nothing fails but the store, so the whole key sequence is tried again (after
 * GitLab Runner's `Retrying...` and its 1 s back-off) when no key was restored and the store could not
 * be reached or answered 5xx past the transfer's own retries. A missing cache or an unusable archive
 * would be the same on the next try, and is not tried again.
 */
import { stat } from 'node:fs/promises';
import { sleep } from '../util/timers.js';
import { extractArchive } from '../artifacts/extract.js';
import { megabytes } from '../artifacts/naming.js';
import { CacheError, cleanUrl } from './errors.js';
import type { CacheContext, CacheStageOptions, CacheTraffic } from './job.js';
import { alternateKey, storedKey, type StoredKey } from './key.js';
import { localCacheFile } from './local.js';
import { removeCachePaths } from './clean-up.js';
import { parseGoBool } from '../util/go-bool.js';
import type { RemoteCache } from './remote.js';
import { setUpStage } from './stage-setup.js';
import { downloadCacheFile, selectCacheSource, type SignedRequest } from './transfer.js';

/** Restores the cache `opts.spec` names. Never throws but the job's abort reason and CACHE_POLICY_UNKNOWN. */
export async function restoreCache(ctx: CacheContext, opts: CacheStageOptions): Promise<CacheTraffic | undefined> {
  const setup = await setUpStage(ctx, opts, 'restore');
  if (!setup) return undefined;
  const attempts = Math.min(MAX_ATTEMPTS, Math.max(1, Math.floor(opts.attempts ?? 1)));
  for (let attempt = 1; ; attempt += 1) {
    const { restored, storeFailed } = await restoreKeys(ctx, opts, setup);
    if (restored || !storeFailed || attempt >= attempts) return restored;
    ctx.log('WARNING: Retrying...');
    await sleep(RETRY_DELAY_MS, ctx.signal);
  }
}

/** GitLab Runner's bounds on a stage's attempts, and its first back-off between them. */
const MAX_ATTEMPTS = 10;
const RETRY_DELAY_MS = 1000;

/** The key, then each fallback key, until one is restored; says whether a failure was the store's. */
async function restoreKeys(ctx: CacheContext, opts: CacheStageOptions, setup: NonNullable<Awaited<ReturnType<typeof setUpStage>>>): Promise<{ restored?: CacheTraffic; storeFailed: boolean }> {
  const { plan, remote } = setup;
  let storeFailed = false;
  for (const key of [plan.key, ...plan.fallbackKeys]) {
    ctx.log(`Checking cache for ${key}...`);
    try {
      const restored = await restoreKey(ctx, opts, remote, key, plan.hashed);
      ctx.log(`Successfully extracted cache`);
      return { restored, storeFailed };
    } catch (error) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (error instanceof CacheError && error.retryable) storeFailed = true;
      ctx.log(`WARNING: ${(error as Error).message}`);
      ctx.log('WARNING: Failed to extract cache');
      if (parseGoBool(opts.variable('FF_CLEAN_UP_FAILED_CACHE_EXTRACT')) === true) await removeCachePaths(ctx, opts.spec.paths ?? []);
    }
  }
  return { storeFailed };
}

/**
 * The signed GET of the object to download: as GitLab Runner 19's cache-extractor, the key under the other
 * FF_HASH_CACHE_KEYS naming is looked at too (so caches survive the flag turned on or off), and taken
 * when this name has no object, or when its object is the newer of the two.
 */
async function chooseName(ctx: CacheContext, remote: RemoteCache, object: string, other: StoredKey | undefined): Promise<SignedRequest> {
  const primary = await remote.store.signGet(object, remote.expiresSec, ctx.signal);
  const alternateObject = other && remote.objectName(other);
  if (!alternateObject) return primary;
  const alternate = await remote.store.signGet(alternateObject, remote.expiresSec, ctx.signal);
  const chosen = await selectCacheSource({ get: primary }, { get: alternate }, remote.transfer);
  if (chosen.line) ctx.log(chosen.line);
  return chosen.source.get;
}

/** One key: fetched when there is a store, then extracted. Throws what makes it fail. */
async function restoreKey(ctx: CacheContext, opts: CacheStageOptions, remote: RemoteCache | undefined, key: string, hashed: boolean): Promise<CacheTraffic> {
  const stored = storedKey(key, hashed);
  const file = localCacheFile(opts.cacheDir, ctx.build, stored.name);
  if (!file) throw new CacheError('CACHE_DOWNLOAD_FAILED', `cache key ${JSON.stringify(key)} leaves the cache dir`);
  if (remote) {
    const object = remote.objectName(stored);
    if (!object) throw new CacheError('CACHE_DOWNLOAD_FAILED', 'computed cache path outside of project bucket. Please remove `../` from cache key');
    const request = await chooseName(ctx, remote, object, alternateKey(key, hashed));
    const outcome = await downloadCacheFile(request, file, remote.transfer);
    if (outcome.kind === 'missing') throw new CacheError('CACHE_DOWNLOAD_FAILED', 'file does not exist');
    if (outcome.kind === 'up-to-date') ctx.log(`cache.zip is up to date`);
    else ctx.log(`Downloaded cache from ${cleanUrl(request.url)}${outcome.etag ? `  ETag=${outcome.etag}` : ''} (${megabytes(outcome.bytes)})`);
  } else if (!(await stat(file).then((stats) => stats.isFile(), () => false))) {
    throw new CacheError('CACHE_DOWNLOAD_FAILED', 'Cache file does not exist');
  }
  const size = (await stat(file)).size;
  const summary = await extractArchive(file, ctx.projectDir, ctx.signal, ctx.extractBudget ? { budget: ctx.extractBudget } : {});
  ctx.log(`Restored cache ${JSON.stringify(key)}: ${summary.entries} entries, ${megabytes(summary.bytes)}`);
  return { bytes: size };
}
