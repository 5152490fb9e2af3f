/**
 * `[runners.cache]` as the cache reads it: GitLab Runner 19's `cacheconfig.Config` with its key names
 * (the config schema, agent/config/cache-schema.ts, produces exactly this, defaults filled in). A
 * `Type` of none means the cache stays local (in `cache_dir`), as without the table.
 */

export type CacheType = 's3' | 'azure' | 'gcs';

export interface S3CacheConfig {
  ServerAddress: string;
  AccessKey: string;
  SecretKey: string;
  SessionToken: string;
  BucketName: string;
  BucketLocation: string;
  Insecure: boolean;
  /** Lower-cased; empty: `iam` unless ServerAddress, AccessKey and SecretKey are all given. */
  AuthenticationType: '' | 'access-key' | 'iam';
  ServerSideEncryption: string;
  ServerSideEncryptionKeyID: string;
  /** Unset: true (AWS endpoints only). */
  DualStack?: boolean | undefined;
  /** Unset: path style for any endpoint but AWS's and Google's. */
  PathStyle?: boolean | undefined;
  Accelerate: boolean;
}

export interface AzureCacheConfig {
  AccountName: string;
  AccountKey: string;
  ContainerName: string;
  /** Empty: `blob.core.windows.net`. */
  StorageDomain: string;
}

export interface GcsCacheConfig {
  AccessID: string;
  PrivateKey: string;
  CredentialsFile: string;
  BucketName: string;
  /** Empty: `googleapis.com`. */
  UniverseDomain: string;
}

export interface CacheConfig {
  Type?: CacheType | undefined;
  Path: string;
  Shared: boolean;
  /** Bytes; 0: no limit. An archive over it is kept only locally. */
  MaxUploadedArchiveSize: number;
  s3?: S3CacheConfig | undefined;
  azure?: AzureCacheConfig | undefined;
  gcs?: GcsCacheConfig | undefined;
}
