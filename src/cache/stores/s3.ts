/**
 * `Type = "s3"`: URLs signed with AWS Signature V4 by the AWS SDK's presigner, with the settings of
 * GitLab Runner 19's S3 adapter (`cache/s3v2`, `cacheconfig`): the endpoint from `ServerAddress`
 * (`https://`, `http://` with `Insecure`, the scheme's own port left out; AWS's own when empty or
 * `s3.amazonaws.com`), dual-stack (default on) and acceleration only on AWS's endpoint, path-style
 * addressing unless the endpoint is AWS's or Google's (or `PathStyle` says), static keys or, for
 * `AuthenticationType = "iam"` (or missing keys), the SDK's default credential chain (environment,
 * web identity, ECS, the instance profile). A PUT carries the server-side encryption asked for and
 * the `cachekey` metadata as signed headers. With no `BucketLocation` the bucket's region is asked
 * once (GetBucketLocation, through the runner's transport), `us-east-1` when that fails.
 */
import type { S3Client as S3ClientType, S3ClientConfig } from '@aws-sdk/client-s3';
import { drain, readText, send } from '../../client/transport.js';
import type { S3CacheConfig } from '../config.js';
import { CacheError } from '../errors.js';
import type { CacheStore, StoreContext } from './types.js';

const AWS_ENDPOINT = 'https://s3.amazonaws.com';
const FALLBACK_REGION = 'us-east-1';
/** The longest a SigV4 presigned URL may live. */
const MAX_EXPIRES = 7 * 24 * 3600;

type Sdk = typeof import('@aws-sdk/client-s3');

/** GitLab Runner's endpoint from `ServerAddress` and `Insecure`, or '' for AWS's own. */
export function s3Endpoint(config: Pick<S3CacheConfig, 'ServerAddress' | 'Insecure'>): string {
  if (config.ServerAddress === '') return '';
  const scheme = config.Insecure ? 'http' : 'https';
  const url = URL.canParse(`${scheme}://${config.ServerAddress}`) ? new URL(`${scheme}://${config.ServerAddress}`) : undefined;
  // The URL parser drops the scheme's own port, as GitLab Runner does.
  return url && url.pathname === '/' ? url.origin : `${scheme}://${config.ServerAddress}`;
}

/** Path-style addressing: `PathStyle`, else for any endpoint that is not AWS's or Google's (minio's rule). */
export function s3PathStyle(config: Pick<S3CacheConfig, 'ServerAddress' | 'Insecure' | 'PathStyle' | 'BucketName'>): boolean {
  if (config.PathStyle !== undefined) return config.PathStyle;
  const endpoint = s3Endpoint(config);
  if (endpoint === '') return false;
  const url = new URL(endpoint);
  if (url.protocol === 'https:' && config.BucketName.includes('.')) return true;
  const host = url.hostname.toLowerCase();
  const virtual = /(^|\.)amazonaws\.com(\.cn)?$/.test(host) || host === 'storage.googleapis.com' || /(^|\.)aliyuncs\.com$/.test(host);
  return !virtual;
}

/** `AuthenticationType` as GitLab Runner reads it: empty means IAM unless the address and both keys are given. */
export function s3AuthType(config: Pick<S3CacheConfig, 'AuthenticationType' | 'ServerAddress' | 'AccessKey' | 'SecretKey'>): 'access-key' | 'iam' {
  if (config.AuthenticationType !== '') return config.AuthenticationType;
  return config.ServerAddress === '' || config.AccessKey === '' || config.SecretKey === '' ? 'iam' : 'access-key';
}

/** The signed headers of a PUT for `ServerSideEncryption` (S3/AES256, KMS/aws:kms, DSSE-KMS/aws:kms:dsse). */
export function s3EncryptionHeaders(config: Pick<S3CacheConfig, 'ServerSideEncryption' | 'ServerSideEncryptionKeyID'>): Record<string, string> {
  const kind = config.ServerSideEncryption.toUpperCase();
  const key: Record<string, string> = config.ServerSideEncryptionKeyID ? { 'x-amz-server-side-encryption-aws-kms-key-id': config.ServerSideEncryptionKeyID } : {};
  if (kind === 'S3' || kind === 'AES256') return { 'x-amz-server-side-encryption': 'AES256' };
  if (kind === 'KMS' || kind === 'AWS:KMS') return { 'x-amz-server-side-encryption': 'aws:kms', ...key };
  if (kind === 'DSSE-KMS' || kind === 'AWS:KMS:DSSE') return { 'x-amz-server-side-encryption': 'aws:kms:dsse', ...key };
  return {};
}

export async function createS3Store(config: S3CacheConfig, context: StoreContext): Promise<CacheStore> {
  if (config.BucketName === '') throw new CacheError('CACHE_STORE_UNUSABLE', '[runners.cache.s3] BucketName is empty');
  const sdk = await import('@aws-sdk/client-s3');
  const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
  const endpoint = s3Endpoint(config);
  let client: S3ClientType | undefined;
  const clientFor = async (signal: AbortSignal): Promise<S3ClientType> => {
    if (client) return client;
    const region = config.BucketLocation || (await bucketRegion(sdk, getSignedUrl, config, context, signal));
    const made = quietly(() => new sdk.S3Client(clientOptions(config, endpoint, region)));
    // A region asked for and not answered is not kept: the next job asks again.
    if (config.BucketLocation || region !== FALLBACK_REGION) client = made;
    return made;
  };
  const sign = async (presign: (client: S3ClientType, options: { expiresIn: number; unhoistableHeaders: Set<string> }) => Promise<string>, unhoistable: string[], expiresSec: number, signal: AbortSignal): Promise<URL> => {
    try {
      return new URL(await presign(await clientFor(signal), { expiresIn: Math.min(MAX_EXPIRES, Math.max(1, expiresSec)), unhoistableHeaders: new Set(unhoistable) }));
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new CacheError('CACHE_STORE_UNUSABLE', `cannot sign an S3 URL for bucket ${config.BucketName}: ${(error as Error).message}`, { cause: error });
    }
  };
  return {
    description: `s3://${config.BucketName}`,
    async signGet(object, expiresSec, signal) {
      const command = new sdk.GetObjectCommand({ Bucket: config.BucketName, Key: object });
      return { url: await sign((client, options) => getSignedUrl(client, command, options), [], expiresSec, signal), headers: {} };
    },
    async signPut(object, metadata, expiresSec, signal) {
      const meta = Object.fromEntries(Object.entries(metadata).filter(([, value]) => /^[\x20-\x7e]*$/.test(value)));
      const encryption = s3EncryptionHeaders(config);
      const sse = encryption['x-amz-server-side-encryption'] as 'AES256' | 'aws:kms' | 'aws:kms:dsse' | undefined;
      const command = new sdk.PutObjectCommand({
        Bucket: config.BucketName,
        Key: object,
        ...(Object.keys(meta).length > 0 ? { Metadata: meta } : {}),
        ...(sse ? { ServerSideEncryption: sse } : {}),
        ...(sse && sse !== 'AES256' && config.ServerSideEncryptionKeyID ? { SSEKMSKeyId: config.ServerSideEncryptionKeyID } : {}),
      });
      const metaHeaders = Object.fromEntries(Object.entries(meta).map(([name, value]) => [`x-amz-meta-${name.toLowerCase()}`, value]));
      const headers = { ...metaHeaders, ...encryption };
      return { url: await sign((client, options) => getSignedUrl(client, command, options), Object.keys(headers), expiresSec, signal), headers };
    },
  };
}

function clientOptions(config: S3CacheConfig, endpoint: string, region: string): S3ClientConfig {
  const custom = endpoint !== '' && endpoint !== AWS_ENDPOINT;
  const credentials = s3AuthType(config) === 'access-key'
    ? { credentials: { accessKeyId: config.AccessKey, secretAccessKey: config.SecretKey, ...(config.SessionToken ? { sessionToken: config.SessionToken } : {}) } }
    : {};
  return {
    region,
    ...credentials,
    forcePathStyle: s3PathStyle(config),
    ...(custom ? { endpoint } : { useDualstackEndpoint: config.DualStack ?? true, useAccelerateEndpoint: config.Accelerate }),
    // As GitLab Runner 19 does for other stores than AWS: checksums only where S3 requires them
    // (a signed x-amz-checksum-mode breaks presigned GETs elsewhere), unless the environment says.
    ...(custom && !process.env.AWS_REQUEST_CHECKSUM_CALCULATION ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const } : {}),
    ...(custom && !process.env.AWS_RESPONSE_CHECKSUM_VALIDATION ? { responseChecksumValidation: 'WHEN_REQUIRED' as const } : {}),
  };
}

/** The bucket's region from a signed GetBucketLocation sent through the runner's transport; `us-east-1` when that fails. */
async function bucketRegion(sdk: Sdk, getSignedUrl: typeof import('@aws-sdk/s3-request-presigner').getSignedUrl, config: S3CacheConfig, context: StoreContext, signal: AbortSignal): Promise<string> {
  try {
    const client = quietly(() => new sdk.S3Client(clientOptions({ ...config, DualStack: false, Accelerate: false }, s3Endpoint(config), FALLBACK_REGION)));
    const url = new URL(await getSignedUrl(client, new sdk.GetBucketLocationCommand({ Bucket: config.BucketName }), { expiresIn: 60 }));
    const timeout = AbortSignal.any([signal, context.signal, AbortSignal.timeout(30_000)]);
    const response = await send(context.transport, { method: 'GET', url, signal: timeout, headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000 });
    if (response.status !== 200) {
      await drain(response);
      return FALLBACK_REGION;
    }
    const text = await readText(response);
    const location = /<LocationConstraint[^>]*>([^<]*)<\/LocationConstraint>/.exec(text)?.[1] ?? '';
    return location === '' ? FALLBACK_REGION : location === 'EU' ? 'eu-west-1' : location;
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return FALLBACK_REGION;
  }
}

/**
 * Makes an SDK client without the SDK's one-time process warning that its releases after January 2027
 * need Node 22 (the version in package-lock.json runs on Node 20; the warning would be printed once
 * on the runner's standard error for nothing an operator can act on). The SDK reads its switch when
 * the first client is made; the environment is left as it was.
 */
function quietly<T>(make: () => T): T {
  const name = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
  const before = process.env[name];
  process.env[name] = 'true';
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  }
}
