/**
 * `[runners.cache]` and its `[runners.cache.s3]`, `[runners.cache.azure]`, `[runners.cache.gcs]`:
 * GitLab Runner 19's distributed cache (`cache/cacheconfig`), read into the `CacheConfig` the cache
 * stages use (src/cache/config.ts), with GitLab Runner's key names and defaults. `Type` names the
 * store (`s3v2`, `gcsv2`, GitLab Runner's names of its newer adapters, are the same stores here);
 * none keeps caches local, in `cache_dir`.
 */
import { z } from 'zod';
import type { CacheConfig } from '../../cache/config.js';
import type { RunnerSection } from './section.js';

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
  RoleARN: text,
  UploadRoleARN: text,
  AssumeRoleMaxConcurrency: z.int().default(0),
  DisableAssumeRoleCredentialsCaching: flag,
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

export const cacheSection = {
  key: 'cache',
  schema: cacheSchema.prefault({}),
  keys: { known: Object.keys(cacheSchema.shape), ignored: new Set<string>() },
} as const satisfies RunnerSection;
