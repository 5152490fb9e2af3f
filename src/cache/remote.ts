/**
 * A job's way to its distributed cache: the store its runner names, the object name of a key, and
 * the transfer options (the job's CACHE_REQUEST_TIMEOUT, the runner's transport, retries told in the
 * job log). Undefined when the runner has no store: the cache is then the local copy alone.
 */
import { shortToken } from '../util/short-token.js';
import type { CacheContext, CacheStageOptions } from './job.js';
import { urlLifetimeSec } from './job.js';
import type { StoredKey } from './key.js';
import { cacheObjectName } from './object-name.js';
import type { CacheSettings } from './plan.js';
import { openCacheStore, type CacheStore } from './store.js';
import type { TransferOptions } from './transfer.js';
import { cacheTransport } from './transport-pool.js';

export interface RemoteCache {
  store: CacheStore;
  /** The object name of a stored key; undefined when it would leave the project's part of the store. */
  objectName(key: StoredKey): string | undefined;
  /** How long a signed URL lives. */
  expiresSec: number;
  transfer: TransferOptions;
}

/** The job's store, or undefined without one. Throws CacheError CACHE_STORE_UNUSABLE when it cannot be made. */
export async function openRemote(ctx: CacheContext, opts: CacheStageOptions, settings: CacheSettings): Promise<RemoteCache | undefined> {
  const config = opts.config;
  if (!config?.Type) return undefined;
  const transport = cacheTransport(opts.ca);
  const store = await openCacheStore(config, { transport, signal: ctx.signal });
  const naming = { path: config.Path, shared: config.Shared, shortToken: shortToken(opts.runnerToken) };
  return {
    store,
    objectName: (key) => cacheObjectName(naming, ctx.build.project_id, key.name, key.sharded),
    expiresSec: urlLifetimeSec(ctx),
    transfer: {
      transport,
      requestTimeoutMs: settings.requestTimeoutMs,
      signal: ctx.signal,
      onRetry: (error) => ctx.log(`WARNING: Retrying... (${error.message})`),
    },
  };
}
