/**
 * `[runners.cache]` and its `[runners.cache.s3]`, `[runners.cache.azure]`, `[runners.cache.gcs]`:
 * GitLab Runner 19's distributed cache (`cache/cacheconfig`), read into the `CacheConfig` the cache
 * stages use (src/cache/config.ts), with GitLab Runner's key names and defaults. `Type` names the
 * store (`s3v2`, `gcsv2`, GitLab Runner's names of its newer adapters, are the same stores here);
 * none keeps caches local, in `cache_dir`. CACHE_KEYS gives every key of the table and its sub-tables
 * a status (keys.ts).
 */
import { z } from 'zod';
import type { CacheConfig } from '../../cache/config.js';
import { honoured, warned } from '../../util/compat.js';
import { key, keyTable } from './keys.js';

const text = z.string().default('');
const flag = z.boolean().default(false);

export const s3Schema = z.strictObject({
  ServerAddress: text,
  AccessKey: text,
  SecretKey: text,
  SessionToken: text,
  BucketName: text,
  BucketLocation: text,
  Insecure: flag,
  AuthenticationType: z
    .string()
    .default('')
    .transform((v) => v.toLowerCase())
    .pipe(z.enum(['', 'access-key', 'iam'], { error: '"access-key" or "iam" (or empty: iam unless ServerAddress, AccessKey and SecretKey are set)' })),
  ServerSideEncryption: z
    .string()
    .default('')
    .refine((v) => ['', 'S3', 'AES256', 'KMS', 'AWS:KMS', 'DSSE-KMS', 'AWS:KMS:DSSE'].includes(v.toUpperCase()), { error: '"S3" (AES256), "KMS" (aws:kms) or "DSSE-KMS" (aws:kms:dsse)' }),
  ServerSideEncryptionKeyID: text,
  DualStack: z.boolean().optional(),
  PathStyle: z.boolean().optional(),
  Accelerate: flag,
});

export const azureSchema = z.strictObject({
  AccountName: text,
  AccountKey: text,
  ContainerName: text,
  StorageDomain: text,
});

export const gcsSchema = z.strictObject({
  AccessID: text,
  PrivateKey: text,
  CredentialsFile: text,
  BucketName: text,
  UniverseDomain: text,
});

const TYPES: Readonly<Record<string, CacheConfig['Type']>> = { '': undefined, s3: 's3', s3v2: 's3', azure: 'azure', gcs: 'gcs', gcsv2: 'gcs' };

export const cacheSchema = z.strictObject({
  Type: z
    .string()
    .default('')
    .refine((v) => v in TYPES, { error: '"s3", "azure" or "gcs" (or empty: caches stay local, in cache_dir)' })
    .transform((v) => TYPES[v]),
  Path: text,
  Shared: flag,
  /** Bytes; 0: no limit. */
  MaxUploadedArchiveSize: z.int().min(0).default(0),
  s3: s3Schema.optional(),
  azure: azureSchema.optional(),
  gcs: gcsSchema.optional(),
});

export type CacheSchemaConfig = z.output<typeof cacheSchema>;

// The cache is written against CacheConfig: a schema change that breaks it must not compile.
type Assignable<T extends CacheConfig> = T;
export type CacheSchemaIsCacheConfig = Assignable<CacheSchemaConfig>;

/** Always present in an entry: without the table, caches are local. */
export const cacheSection = cacheSchema.prefault({});

const NO_ROLES = "ci-runner does not assume an AWS role for the cache: its URLs are signed with the [runners.cache.s3] keys or the machine's IAM identity";

/** GitLab Runner's S3 keys ci-runner does not use (the register flags name them too). */
export const S3_WARNED_KEYS = ['RoleARN', 'UploadRoleARN', 'AssumeRoleMaxConcurrency', 'DisableAssumeRoleCredentialsCaching'] as const;

const S3_KEYS = keyTable(s3Schema, {
  ServerAddress: key(honoured()),
  AccessKey: key(honoured()),
  SecretKey: key(honoured()),
  SessionToken: key(honoured()),
  BucketName: key(honoured()),
  BucketLocation: key(honoured('empty: the bucket is asked for its region (GetBucketLocation), us-east-1 when that fails')),
  Insecure: key(honoured()),
  AuthenticationType: key(honoured('iam takes the AWS SDK\'s credential chain: environment, web identity, ECS, instance profile')),
  ServerSideEncryption: key(honoured()),
  ServerSideEncryptionKeyID: key(honoured()),
  DualStack: key(honoured()),
  PathStyle: key(honoured()),
  Accelerate: key(honoured()),
  ...Object.fromEntries(S3_WARNED_KEYS.map((name) => [name, key(warned(NO_ROLES))])),
});

const AZURE_KEYS = keyTable(azureSchema, {
  AccountName: key(honoured()),
  AccountKey: key(honoured('required here: without it GitLab Runner signs with an Entra ID user delegation key, which ci-runner cannot; each job then warns and keeps the cache local')),
  ContainerName: key(honoured()),
  StorageDomain: key(honoured()),
});

const GCS_KEYS = keyTable(gcsSchema, {
  AccessID: key(honoured()),
  PrivateKey: key(honoured()),
  CredentialsFile: key(honoured()),
  BucketName: key(honoured()),
  UniverseDomain: key(honoured()),
});

export const CACHE_KEYS = keyTable(cacheSchema, {
  Type: key(honoured('s3, azure, gcs (s3v2 and gcsv2 are the same stores)')),
  Path: key(honoured()),
  Shared: key(honoured()),
  MaxUploadedArchiveSize: key(honoured()),
  s3: key(honoured(), S3_KEYS),
  azure: key(honoured(), AZURE_KEYS),
  gcs: key(honoured(), GCS_KEYS),
});
