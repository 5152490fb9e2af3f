/**
 * `Type = "azure"`: blob URLs with a service SAS signed with the account key by Azure's SDK
 * (`@azure/storage-blob`, only its signer), as GitLab Runner 19's Azure adapter signs them: the blob
 * `https://<AccountName>.<StorageDomain>/<ContainerName>/<object>`, read permission for a GET and
 * write for a PUT, valid from an hour ago (clock skew) for the job's timeout, HTTPS only. A PUT is a
 * block blob carrying the `cachekey` metadata; past 256 MiB it goes up in blocks (transfer.ts).
 *
 * Without `AccountKey` GitLab Runner asks Entra ID for a user delegation key; ci-runner does not
 * (the config loader warns, cache-schema.ts), so such a store cannot sign.
 */
import type { AzureCacheConfig } from '../config.js';
import { CacheError } from '../errors.js';
import type { CacheStore } from './types.js';

const DEFAULT_DOMAIN = 'blob.core.windows.net';
/** One PUT up to this size; blocks of BLOCK_SIZE beyond it. */
export const AZURE_SINGLE_PUT_MAX = 256 * 1024 * 1024;
const BLOCK_SIZE = 64 * 1024 * 1024;

/** The blob service's URL for `config`. */
export function azureServiceUrl(config: Pick<AzureCacheConfig, 'AccountName' | 'StorageDomain'>): string {
  return `https://${config.AccountName}.${config.StorageDomain || DEFAULT_DOMAIN}`;
}

export async function createAzureStore(config: AzureCacheConfig): Promise<CacheStore> {
  if (config.AccountName === '') throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.azure] AccountName is empty');
  if (config.ContainerName === '') throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.azure] ContainerName is empty');
  if (config.AccountKey === '') {
    throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.azure] has no AccountKey: signing with an Entra ID user delegation key is not supported by ci-runner; give the account key');
  }
  const { BlobSASPermissions, SASProtocol, StorageSharedKeyCredential, generateBlobSASQueryParameters } = await import('@azure/storage-blob');
  let credential: InstanceType<typeof StorageSharedKeyCredential>;
  try {
    credential = new StorageSharedKeyCredential(config.AccountName, config.AccountKey);
  } catch (error) {
    throw new CacheError('CACHE_STORE_UNUSABLE', `[runners.cache.azure] AccountKey is not usable: ${(error as Error).message}`, { cause: error });
  }
  const service = azureServiceUrl(config);
  const blobUrl = (object: string, permissions: 'r' | 'w', expiresSec: number): URL => {
    const now = Date.now();
    const sas = generateBlobSASQueryParameters(
      {
        containerName: config.ContainerName,
        blobName: object,
        permissions: BlobSASPermissions.parse(permissions),
        startsOn: new Date(now - 3600_000),
        expiresOn: new Date(now + Math.max(1, expiresSec) * 1000),
        protocol: SASProtocol.Https,
      },
      credential,
    ).toString();
    const path = [config.ContainerName, ...object.split('/')].map(encodeURIComponent).join('/');
    return new URL(`${service}/${path}?${sas}`);
  };
  return {
    description: `azure://${config.AccountName}/${config.ContainerName}`,
    signGet(object, expiresSec) {
      return Promise.resolve({ url: blobUrl(object, 'r', expiresSec), headers: {} });
    },
    signPut(object, metadata, expiresSec) {
      const meta = Object.fromEntries(Object.entries(metadata).filter(([, value]) => /^[\x20-\x7e]*$/.test(value)).map(([name, value]) => [`x-ms-meta-${name}`, value]));
      return Promise.resolve({
        url: blobUrl(object, 'w', expiresSec),
        headers: { 'x-ms-blob-type': 'BlockBlob', ...meta },
        blocks: { singleMax: AZURE_SINGLE_PUT_MAX, blockSize: BLOCK_SIZE },
      });
    },
  };
}
