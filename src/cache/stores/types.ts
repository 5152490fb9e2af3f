/** What every store of the distributed cache offers (s3.ts, azure.ts, gcs.ts), and what it may use. */
import type { Transport } from '../../client/transport.js';
import type { SignedRequest, SignedUpload } from '../transfer.js';

export interface CacheStore {
  /** What a log line may call it: `s3://bucket`, `azure://account/container`, `gs://bucket` (no secret). */
  readonly description: string;
  /** A signed GET of `object`, valid `expiresSec`. Throws CacheError CACHE_STORE_UNUSABLE. */
  signGet(object: string, expiresSec: number, signal: AbortSignal): Promise<SignedRequest>;
  /** A signed PUT of `object` with its metadata (`cachekey`), valid `expiresSec`. */
  signPut(object: string, metadata: Readonly<Record<string, string>>, expiresSec: number, signal: AbortSignal): Promise<SignedUpload>;
}

/** What a store may need besides its settings: the runner's transport (S3 asks a bucket's region through it). */
export interface StoreContext {
  transport: Transport;
  signal: AbortSignal;
}
