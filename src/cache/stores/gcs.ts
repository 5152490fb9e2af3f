/**
 * `Type = "gcs"`: V4 signed URLs from Google's own library (`@google-cloud/storage`'s signer), with
 * the credentials GitLab Runner 19's GCS adapter takes: `CredentialsFile` (a service account's JSON
 * key), else `AccessID` and `PrivateKey`, else the machine's (application default credentials: the
 * metadata server's account, signing through the IAM API). A PUT signs `Content-Type:
 * application/octet-stream`, the `cachekey` metadata and, with `MaxUploadedArchiveSize`,
 * `X-Goog-Content-Length-Range: 0,<max>`, which the client must send as they are. GitLab Runner's Go
 * library signs V2 URLs; the store takes either, and the object is the same.
 */
import { readFile } from 'node:fs/promises';
import type { GcsCacheConfig } from '../config.js';
import { CacheError } from '../errors.js';
import type { CacheStore } from './types.js';

/** The longest a V4 signed URL may live. */
const MAX_EXPIRES = 7 * 24 * 3600;

interface ServiceAccountKey {
  client_email: string;
  private_key: string;
}

/** The signing credentials `config` names, or undefined for the machine's own. */
export async function gcsCredentials(config: GcsCacheConfig): Promise<ServiceAccountKey | undefined> {
  if (config.CredentialsFile !== '') {
    let parsed: { type?: unknown; client_email?: unknown; private_key?: unknown };
    try {
      parsed = JSON.parse(await readFile(config.CredentialsFile, 'utf8')) as typeof parsed;
    } catch (error) {
      throw new CacheError('CACHE_STORE_UNUSABLE', `[runners.cache.gcs] CredentialsFile ${config.CredentialsFile}: ${(error as Error).message}`, { cause: error });
    }
    if (parsed.type !== 'service_account' || typeof parsed.client_email !== 'string' || typeof parsed.private_key !== 'string') {
      throw new CacheError('CACHE_STORE_UNUSABLE', `[runners.cache.gcs] CredentialsFile ${config.CredentialsFile} is not a service account key (type "service_account" with client_email and private_key)`);
    }
    return { client_email: parsed.client_email, private_key: parsed.private_key };
  }
  if (config.AccessID === '' && config.PrivateKey === '') return undefined;
  if (config.AccessID === '' || config.PrivateKey === '') throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.gcs] needs both AccessID and PrivateKey (or CredentialsFile)');
  return { client_email: config.AccessID, private_key: config.PrivateKey };
}

export async function createGcsStore(config: GcsCacheConfig, maxUploadedArchiveSize: number): Promise<CacheStore> {
  if (config.BucketName === '') throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.gcs] BucketName is empty');
  const credentials = await gcsCredentials(config);
  const { Storage } = await import('@google-cloud/storage');
  const storage = new Storage({ ...(credentials ? { credentials } : {}), ...(config.UniverseDomain ? { universeDomain: config.UniverseDomain } : {}) });
  const bucket = storage.bucket(config.BucketName);
  const sign = async (object: string, options: { action: 'read' | 'write'; contentType?: string; extensionHeaders?: Record<string, string> }, expiresSec: number): Promise<URL> => {
    try {
      const [url] = await bucket.file(object).getSignedUrl({ version: 'v4', expires: Date.now() + Math.min(MAX_EXPIRES, Math.max(1, expiresSec)) * 1000, ...options });
      return new URL(url);
    } catch (error) {
      throw new CacheError('CACHE_STORE_UNUSABLE', `cannot sign a GCS URL for bucket ${config.BucketName}: ${(error as Error).message}`, { cause: error });
    }
  };
  return {
    description: `gs://${config.BucketName}`,
    async signGet(object, expiresSec) {
      return { url: await sign(object, { action: 'read' }, expiresSec), headers: {} };
    },
    async signPut(object, metadata, expiresSec) {
      const extensionHeaders: Record<string, string> = {
        ...(maxUploadedArchiveSize > 0 ? { 'x-goog-content-length-range': `0,${maxUploadedArchiveSize}` } : {}),
        ...Object.fromEntries(Object.entries(metadata).filter(([, value]) => /^[\x20-\x7e]*$/.test(value)).map(([name, value]) => [`x-goog-meta-${name}`, value])),
      };
      const url = await sign(object, { action: 'write', contentType: 'application/octet-stream', extensionHeaders }, expiresSec);
      return { url, headers: { 'content-type': 'application/octet-stream', ...extensionHeaders } };
    },
  };
}
