/**
 * `[runners.cache]`, GitLab Runner's distributed cache (S3, GCS, Azure): not used yet, caches stay on
 * this host in `cache_dir` (issue 36 gives it meaning). CACHE_KEYS gives each of GitLab Runner 19's keys
 * of the table and its sub-tables a status (keys.ts).
 */
import { warnedTable } from './keys.js';

const NOT_YET = 'ci-runner has no distributed cache yet: caches stay on this host, in cache_dir';

const table = (names: readonly string[]) => warnedTable(NOT_YET, names);

export const CACHE_KEYS = warnedTable(NOT_YET, ['Type', 'Path', 'Shared', 'MaxUploadedArchiveSize'], {
  s3: table([
    'ServerAddress', 'AccessKey', 'SecretKey', 'SessionToken', 'BucketName', 'BucketLocation', 'Insecure', 'AuthenticationType',
    'ServerSideEncryption', 'ServerSideEncryptionKeyID', 'DualStack', 'PathStyle', 'Accelerate', 'RoleARN', 'UploadRoleARN',
    'AssumeRoleMaxConcurrency', 'DisableAssumeRoleCredentialsCaching',
  ]),
  gcs: table(['AccessID', 'PrivateKey', 'CredentialsFile', 'BucketName', 'UniverseDomain']),
  azure: table(['AccountName', 'AccountKey', 'ContainerName', 'StorageDomain']),
});

/** The reason the whole table is ignored (runner-schema.ts gives it to the `cache` key). */
export const CACHE_REASON = NOT_YET;
