/**
 * The object store of a distributed cache (`[runners.cache] Type`): it signs a GET or a PUT of one
 * object, as GitLab Runner's cache adapters do; the transfer itself is transfer.ts's. Each kind's
 * module, and with it its SDK, is loaded only when a runner's config names it: a runner without a
 * distributed cache never loads one (start-up and memory stay as they were). A store is made once
 * per settings and kept (its SDK client, an S3 bucket's region once asked).
 */
import type { CacheConfig } from './config.js';
import { CacheError } from './errors.js';
import type { CacheStore, StoreContext } from './stores/types.js';

export type { CacheStore, StoreContext } from './stores/types.js';

/** Stores made so far, by settings; operators write the settings, so the map stays small. */
const stores = new Map<string, Promise<CacheStore>>();
const MAX_STORES = 32;

/** The store `config` names (its `Type` must be set). Throws CacheError CACHE_STORE_UNUSABLE. */
export async function openCacheStore(config: CacheConfig, context: StoreContext): Promise<CacheStore> {
  const key = JSON.stringify([config.Type, config.s3, config.azure, config.gcs, config.MaxUploadedArchiveSize]);
  let store = stores.get(key);
  if (!store) {
    store = createStore(config, context);
    if (stores.size >= MAX_STORES) stores.delete(stores.keys().next().value ?? '');
    stores.set(key, store);
    // A store that could not be made is asked again by the next job (the settings may be fine, the network not).
    store.catch(() => stores.delete(key));
  }
  return store;
}

async function createStore(config: CacheConfig, context: StoreContext): Promise<CacheStore> {
  switch (config.Type) {
    case 's3':
      return (await import('./stores/s3.js')).createS3Store(required(config.s3, 's3'), context);
    case 'azure':
      return (await import('./stores/azure.js')).createAzureStore(required(config.azure, 'azure'));
    case 'gcs':
      return (await import('./stores/gcs.js')).createGcsStore(required(config.gcs, 'gcs'), config.MaxUploadedArchiveSize);
    default:
      throw new CacheError('CACHE_STORE_UNUSABLE', 'no distributed cache is configured ([runners.cache] Type)');
  }
}

function required<T>(table: T | undefined, name: string): T {
  if (table === undefined) throw new CacheError('CACHE_STORE_UNUSABLE', `[runners.cache] Type = "${name}" needs a [runners.cache.${name}] table`);
  return table;
}
