/**
 * Stage `archive_cache` for one of a job's caches, as GitLab Runner 19's cache-archiver runs it: the
 * cache paths selected in the project dir (artifacts/select.ts: nothing outside it is taken), and
 * unless no file is newer than the local copy (`Archive is up to date!`), zipped in GitLab Runner's
 * `cache.zip` format (entries relative to the project dir, directories with a trailing `/`, symlinks
 * as links, Unix modes and times) into a temp file renamed over the local copy, with `metadata.json`
 * beside it. With a store the archive then goes up, unless it is larger than `MaxUploadedArchiveSize`
 * (GitLab Runner's line, kept only locally). Any problem is a warning (`Failed to create cache`).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createArchive } from '../artifacts/create.js';
import { megabytes } from '../artifacts/naming.js';
import { selectFiles, type Selection } from '../artifacts/select.js';
import { CacheError, cleanUrl } from './errors.js';
import type { CacheContext, CacheStageOptions, CacheTraffic } from './job.js';
import { alternateKey, storedKey } from './key.js';
import { localCacheFile, writeCacheMetadata } from './local.js';
import type { CacheSettings } from './plan.js';
import type { RemoteCache } from './remote.js';
import { setUpStage } from './stage-setup.js';
import { uploadCacheFile } from './transfer.js';

/** Saves the cache `opts.spec` names (the caller decides when, per `cache:when`). Never throws but the abort reason and CACHE_POLICY_UNKNOWN. */
export async function archiveCache(ctx: CacheContext, opts: CacheStageOptions): Promise<CacheTraffic | undefined> {
  const setup = await setUpStage(ctx, opts, 'save');
  if (!setup) return undefined;
  const { plan, settings, remote } = setup;
  ctx.log(`Creating cache ${plan.key}...`);
  try {
    const traffic = await saveKey(ctx, opts, settings, remote, plan.key, plan.hashed);
    ctx.log('Created cache');
    return traffic;
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    ctx.log(`WARNING: ${(error as Error).message}`);
    ctx.log('WARNING: Failed to create cache');
    return undefined;
  }
}

async function saveKey(ctx: CacheContext, opts: CacheStageOptions, settings: CacheSettings, remote: RemoteCache | undefined, key: string, hashed: boolean): Promise<CacheTraffic | undefined> {
  const stored = storedKey(key, hashed);
  const file = localCacheFile(opts.cacheDir, ctx.build, stored.name);
  if (!file) throw new CacheError('CACHE_UPLOAD_FAILED', `cache key ${JSON.stringify(key)} leaves the cache dir`);
  const spec = opts.spec;
  const selection = await selectFiles(ctx.projectDir, { ...(spec.paths ? { paths: spec.paths } : {}), ...(spec.untracked ? { untracked: true } : {}) }, ctx.log, ctx.signal);
  if (selection.entries.length === 0) {
    ctx.log('WARNING: No files to cache.');
    return undefined;
  }
  const alternate = alternateKey(key, hashed);
  await takeAlternate(file, alternate && localCacheFile(opts.cacheDir, ctx.build, alternate.name));
  if (await upToDate(file, selection)) {
    ctx.log('Archive is up to date!');
    return undefined;
  }
  const size = await writeArchive(ctx, file, selection, settings);
  await writeCacheMetadata(file, { cachekey: key });
  ctx.log(`Created cache ${JSON.stringify(key)}: ${selection.files} file(s), ${megabytes(selection.bytes)} (${megabytes(size)} compressed)`);
  if (!remote) return { bytes: size };
  const max = opts.config?.MaxUploadedArchiveSize ?? 0;
  if (max > 0 && size > max) {
    ctx.log(`Cache archive size (${size}) is too big (Limit is set to ${max}). Cache will be stored only locally.`);
    return { bytes: size };
  }
  const object = remote.objectName(stored);
  if (!object) throw new CacheError('CACHE_UPLOAD_FAILED', 'computed cache path outside of project bucket. Please remove `../` from cache key');
  const request = await remote.store.signPut(object, { cachekey: key }, remote.expiresSec, ctx.signal);
  ctx.log(`Uploading cache.zip to ${cleanUrl(request.url)}`);
  await uploadCacheFile(request, file, remote.transfer);
  return { bytes: size };
}

/**
 * As GitLab Runner's archiver (`--alternate-file`): a local copy kept under the other FF_HASH_CACHE_KEYS
 * naming becomes this one when this one does not exist, so turning the flag on or off keeps the cache.
 */
async function takeAlternate(file: string, alternate: string | undefined): Promise<void> {
  if (!alternate || alternate === file || (await stat(file).then(() => true, () => false))) return;
  if (!(await stat(alternate).then((s) => s.isFile(), () => false))) return;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await rename(alternate, file).catch(() => undefined);
}

/** GitLab Runner's check: the local archive exists and no selected entry is newer than it. */
async function upToDate(file: string, selection: Selection): Promise<boolean> {
  const archive = await stat(file).catch(() => undefined);
  return archive !== undefined && selection.entries.every((entry) => entry.mtime.getTime() <= archive.mtimeMs);
}

/** The zip, written to a temp file beside `file` and renamed over it: a job restoring meanwhile reads the old or the new one whole. */
async function writeArchive(ctx: CacheContext, file: string, selection: Selection, settings: CacheSettings): Promise<number> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const size = await createArchive(ctx.projectDir, selection.entries, temp, 'zip', ctx.signal, settings.compressionLevel === undefined ? {} : { compressionLevel: settings.compressionLevel });
    await rename(temp, file);
    return size;
  } finally {
    await rm(temp, { force: true });
  }
}
