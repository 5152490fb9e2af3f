/**
 * The cache of a job (GitLab Runner's local and distributed cache): the two stages the agent calls,
 * restore_cache and archive_cache (docs/protocol-v1.md §9.1), and the parts GitLab Runner's
 * `cache-extractor` and `cache-archiver` helper commands are made of, for the custom executor: the
 * key, the object name, the store's signed URLs, the transfer, the local archive.
 */
export type { CacheConfig, CacheType, S3CacheConfig, AzureCacheConfig, GcsCacheConfig } from './config.js';
export { CacheError, cleanUrl, type CacheErrorCode } from './errors.js';
export { hasCachePaths, type CacheContext, type CacheStageOptions, type CacheTraffic } from './job.js';
export { defaultCacheKey, fallbackKeyAllowed, sanitizeCacheKey, alternateKey, storedKey, type StoredKey } from './key.js';
export { localCacheFile, writeCacheMetadata, ARCHIVE_NAME } from './local.js';
export { cacheObjectName, type ObjectNaming } from './object-name.js';
export { cacheSettings, planCache, type CachePlan, type CacheSettings, type VariableLookup } from './plan.js';
export { restoreCache } from './restore.js';
export { archiveCache } from './save.js';
export { openCacheStore, type CacheStore } from './store.js';
export { setUpStage, type StageSetup } from './stage-setup.js';
export { downloadCacheFile, selectCacheSource, uploadCacheFile, type CacheSource, type DownloadOutcome, type SignedRequest, type SignedUpload, type TransferOptions } from './transfer.js';
export { cacheTransport } from './transport-pool.js';
