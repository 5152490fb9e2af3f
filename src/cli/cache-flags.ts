/**
 * The `--cache-*` flags of `register`, with GitLab Runner 19's flag and environment names (the `long:`
 * and `env:` tags of its `cacheconfig` structs, under the `cache` namespace: `--cache-type`,
 * `--cache-s3-bucket-name`, …; its spellings kept, `--cache-max_uploaded_archive_size` and
 * `--cache-s3-authentication_type` included). Each row names the `[runners.cache]` key it sets, typed
 * against the config schema, so a flag cannot name a key the loader does not know. Values become the
 * entry's raw `[runners.cache]` table, checked as the loader checks it before anything is registered.
 */
import type { Argv } from 'yargs';
import type { azureSchema, cacheSchema, gcsSchema, s3Schema, S3_WARNED_KEYS } from '../agent/config/cache-schema.js';

type Kind = 'string' | 'boolean' | 'int';
type Keys<S extends { shape: object }> = Extract<keyof S['shape'], string>;
/** The S3 keys the schema reads, and GitLab Runner's that the loader warns about (the flags exist all the same). */
type S3Key = Keys<typeof s3Schema> | (typeof S3_WARNED_KEYS)[number];

type CacheFlag = { flag: string; env: string; kind: Kind; describe: string } & (
  | { table?: undefined; key: Exclude<Keys<typeof cacheSchema>, 's3' | 'azure' | 'gcs'> }
  | { table: 's3'; key: S3Key }
  | { table: 'azure'; key: Keys<typeof azureSchema> }
  | { table: 'gcs'; key: Keys<typeof gcsSchema> }
);

const s3 = (key: S3Key, long: string, env: string, kind: Kind, describe: string): CacheFlag => ({ table: 's3', key, flag: `cache-s3-${long}`, env: `CACHE_S3_${env}`, kind, describe });
const gcs = (key: Keys<typeof gcsSchema>, long: string, env: string, describe: string): CacheFlag => ({ table: 'gcs', key, flag: `cache-gcs-${long}`, env, kind: 'string', describe });
const azure = (key: Keys<typeof azureSchema>, long: string, env: string, describe: string): CacheFlag => ({ table: 'azure', key, flag: `cache-azure-${long}`, env: `CACHE_AZURE_${env}`, kind: 'string', describe });

export const CACHE_FLAGS: readonly CacheFlag[] = [
  { key: 'Type', flag: 'cache-type', env: 'CACHE_TYPE', kind: 'string', describe: 'Distributed cache: s3, gcs or azure (none: caches stay in cache_dir)' },
  { key: 'Path', flag: 'cache-path', env: 'CACHE_PATH', kind: 'string', describe: 'Prefix of the cache objects\' names' },
  { key: 'Shared', flag: 'cache-shared', env: 'CACHE_SHARED', kind: 'boolean', describe: 'Share caches between runners (no runner/<short token>/ in the names)' },
  { key: 'MaxUploadedArchiveSize', flag: 'cache-max_uploaded_archive_size', env: 'CACHE_MAXIMUM_UPLOADED_ARCHIVE_SIZE', kind: 'int', describe: 'Largest archive uploaded, in bytes (a larger one stays local; 0: no limit)' },
  s3('ServerAddress', 'server-address', 'SERVER_ADDRESS', 'string', 'host:port of the S3 server (default: AWS)'),
  s3('AccessKey', 'access-key', 'ACCESS_KEY', 'string', 'S3 access key'),
  s3('SecretKey', 'secret-key', 'SECRET_KEY', 'string', 'S3 secret key'),
  s3('SessionToken', 'session-token', 'SESSION_TOKEN', 'string', 'S3 session token'),
  s3('BucketName', 'bucket-name', 'BUCKET_NAME', 'string', 'Bucket the caches go to'),
  s3('BucketLocation', 'bucket-location', 'BUCKET_LOCATION', 'string', 'The bucket\'s region (default: asked of the server)'),
  s3('Insecure', 'insecure', 'INSECURE', 'boolean', 'http instead of https'),
  s3('AuthenticationType', 'authentication_type', 'AUTHENTICATION_TYPE', 'string', 'access-key or iam'),
  s3('ServerSideEncryption', 'server-side-encryption', 'SERVER_SIDE_ENCRYPTION', 'string', 'S3, KMS or DSSE-KMS'),
  s3('ServerSideEncryptionKeyID', 'server-side-encryption-key-id', 'SERVER_SIDE_ENCRYPTION_KEY_ID', 'string', 'KMS key (alias, id or ARN)'),
  s3('DualStack', 'dual-stack', 'DUAL_STACK', 'boolean', 'Dual-stack AWS endpoints (default: true)'),
  s3('PathStyle', 'path-style', 'PATH_STYLE', 'boolean', 'Path-style addressing (default: for any server but AWS and Google)'),
  s3('Accelerate', 'accelerate', 'ACCELERATE', 'boolean', 'S3 Transfer Acceleration'),
  s3('RoleARN', 'role-arn', 'ROLE_ARN', 'string', 'Role for transferring caches (not supported: a warning)'),
  s3('UploadRoleARN', 'upload-role-arn', 'UPLOAD_ROLE_ARN', 'string', 'Role for uploading caches (not supported: a warning)'),
  s3('AssumeRoleMaxConcurrency', 'assume-role-max-concurrency', 'ASSUME_ROLE_MAX_CONCURRENCY', 'int', 'AssumeRole requests at once (with RoleARN only)'),
  s3('DisableAssumeRoleCredentialsCaching', 'disable-assume-role-credentials-caching', 'DISABLE_ASSUME_ROLE_CREDENTIALS_CACHING', 'boolean', 'No caching of AssumeRole credentials (with RoleARN only)'),
  gcs('AccessID', 'access-id', 'CACHE_GCS_ACCESS_ID', 'Service account e-mail that signs GCS URLs'),
  gcs('PrivateKey', 'private-key', 'CACHE_GCS_PRIVATE_KEY', 'Its private key (PEM)'),
  gcs('CredentialsFile', 'credentials-file', 'GOOGLE_APPLICATION_CREDENTIALS', 'A service account\'s JSON key file'),
  gcs('BucketName', 'bucket-name', 'CACHE_GCS_BUCKET_NAME', 'Bucket the caches go to'),
  gcs('UniverseDomain', 'universe-domain', 'CACHE_GCS_UNIVERSE_DOMAIN', 'Universe domain (default: googleapis.com)'),
  azure('AccountName', 'account-name', 'ACCOUNT_NAME', 'Storage account'),
  azure('AccountKey', 'account-key', 'ACCOUNT_KEY', 'Its access key'),
  azure('ContainerName', 'container-name', 'CONTAINER_NAME', 'Container the caches go to'),
  azure('StorageDomain', 'storage-domain', 'STORAGE_DOMAIN', 'Blob domain (default: blob.core.windows.net)'),
];

/** Adds the `--cache-*` options to a command, in a "Distributed cache" group. */
export function addCacheFlags<T>(y: Argv<T>): Argv<T> {
  let out = y;
  for (const f of CACHE_FLAGS) {
    out = out.option(f.flag, { type: f.kind === 'boolean' ? 'boolean' : 'string', describe: `${f.describe} [env: ${f.env}]`, group: 'Distributed cache ([runners.cache]):' });
  }
  return out;
}

/**
 * The raw `[runners.cache]` table from flags, then environment variables (sub-tables `s3`, `gcs`,
 * `azure` only when one of theirs is given); undefined when none is. A value that is not what its
 * key takes is left for the schema to refuse, named by the caller with `cacheFlagOfPath`.
 */
export function cacheTableFromFlags(argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> | undefined {
  const table: Record<string, unknown> = {};
  for (const f of CACHE_FLAGS) {
    const fromFlag = argv[f.flag];
    const fromEnv = env[f.env];
    const raw = fromFlag !== undefined ? fromFlag : fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
    if (raw === undefined) continue;
    const value = f.kind === 'boolean' ? (typeof raw === 'boolean' ? raw : /^(1|true|yes|on)$/i.test(String(raw))) : f.kind === 'int' && /^-?\d+$/.test(String(raw).trim()) ? Number(raw) : String(raw);
    const target = f.table ? ((table[f.table] as Record<string, unknown> | undefined) ?? (table[f.table] = {})) as Record<string, unknown> : table;
    target[f.key] = value;
  }
  return Object.keys(table).length > 0 ? table : undefined;
}

/** `s3.BucketName` → `--cache-s3-bucket-name`, for messages about the parsed table. */
export function cacheFlagOfPath(path: readonly PropertyKey[]): string {
  const [first, second] = path.map(String);
  const f = CACHE_FLAGS.find((row) => (second !== undefined ? row.table === first && row.key === second : row.table === undefined && row.key === first));
  return f ? `--${f.flag}` : `[runners.cache] ${path.map(String).join('.')}`;
}
