/**
 * The flags of GitLab Runner 19's four helper commands (commands/helpers/*.go, common/network.go's
 * JobCredentials), with their environment names: the stage scripts of the custom executor call them
 * as `gitlab-runner <command> …`, and ci-runner installed under that name (or called as itself)
 * answers with the same flags. One table per command; flags that do nothing here say why.
 */
import { warned } from '../../util/compat.js';
import type { EnvFlag } from '../env-options.js';

const meterWhy = warned('ci-runner prints no interactive transfer meter');
const directWhy = warned('ci-runner downloads through the coordinator; a redirect to object storage is followed either way');

/** The job's credentials (common.JobCredentials). */
const JOB: readonly EnvFlag[] = [
  { flag: 'url', env: ['CI_SERVER_URL'], kind: 'string', describe: 'GitLab CI URL' },
  { flag: 'token', env: ['CI_JOB_TOKEN'], kind: 'string', describe: 'Build token' },
  { flag: 'id', env: ['CI_JOB_ID'], kind: 'int', describe: 'The build ID to download and upload artifacts for' },
  { flag: 'tls-ca-file', env: ['CI_SERVER_TLS_CA_FILE'], kind: 'string', describe: 'File containing the certificates to verify the peer when using HTTPS' },
  { flag: 'tls-cert-file', env: ['CI_SERVER_TLS_CERT_FILE'], kind: 'string', describe: 'File containing certificate for TLS client auth with runner when using HTTPS' },
  { flag: 'tls-key-file', env: ['CI_SERVER_TLS_KEY_FILE'], kind: 'string', describe: 'File containing private key for TLS client auth with runner when using HTTPS' },
];

const METER: EnvFlag = { flag: 'transfer-meter-frequency', env: ['TRANSFER_METER_FREQUENCY'], kind: 'string', describe: 'If set to more than 0s it enables an interactive transfer meter', support: meterWhy };

const retry = (what: string): readonly EnvFlag[] => [
  { flag: 'retry', env: [], kind: 'int', min: 0, default: 2, describe: `How many times to retry ${what}` },
  { flag: 'retry-time', env: [], kind: 'string', default: '1s', describe: 'How long to wait between retries' },
];

/** fileArchiver's flags: what goes into an archive, relative to the working directory. */
const ARCHIVER: readonly EnvFlag[] = [
  { flag: 'path', env: [], kind: 'list', describe: 'Add paths to archive' },
  { flag: 'exclude', env: [], kind: 'list', describe: 'Exclude paths from the archive' },
  { flag: 'untracked', env: [], kind: 'boolean', describe: 'Add git untracked files' },
  { flag: 'verbose', env: [], kind: 'boolean', describe: 'Detailed information', support: warned('ci-runner lists what it archives in any case') },
];

export const ARTIFACTS_DOWNLOADER_FLAGS: readonly EnvFlag[] = [
  ...JOB,
  ...retry('download'),
  METER,
  { flag: 'direct-download', env: ['FF_USE_DIRECT_DOWNLOAD'], kind: 'boolean', describe: 'Support direct download for data stored externally to GitLab', support: directWhy },
  { flag: 'archiver-staging-dir', env: ['ARCHIVER_STAGING_DIR'], kind: 'string', describe: 'Directory to stage artifact archives' },
];

export const ARTIFACTS_UPLOADER_FLAGS: readonly EnvFlag[] = [
  ...JOB,
  ...ARCHIVER,
  METER,
  { flag: 'name', env: [], kind: 'string', default: 'artifacts', describe: 'The name of the archive' },
  { flag: 'expire-in', env: [], kind: 'string', describe: 'When to expire artifacts' },
  { flag: 'artifact-format', env: [], kind: 'string', describe: 'Format of generated artifacts (zip, gzip, raw)' },
  { flag: 'artifact-type', env: [], kind: 'string', describe: 'Type of generated artifacts' },
  { flag: 'compression-level', env: ['ARTIFACT_COMPRESSION_LEVEL'], kind: 'string', describe: 'Compression level (fastest, fast, default, slow, slowest)', support: warned('ci-runner writes artifacts at zlib\'s default level') },
  { flag: 'timeout', env: [], kind: 'string', default: '1h0m0s', describe: 'Timeout for the upload operation' },
  { flag: 'response-header-timeout', env: [], kind: 'string', default: '10m0s', describe: 'Timeout for response headers' },
  { flag: 'ci-debug-trace', env: ['CI_DEBUG_TRACE'], kind: 'boolean', describe: 'enable debug trace logging', support: warned('ci-runner logs no response details') },
  { flag: 'archiver-staging-dir', env: ['ARCHIVER_STAGING_DIR'], kind: 'string', describe: 'Directory to stage artifact archives' },
  { flag: 'generate-artifacts-metadata', env: [], kind: 'boolean', describe: 'Generate SLSA provenance metadata', support: warned('ci-runner does not generate artifacts metadata (SLSA provenance)') },
];

const CACHE_TRANSFER: readonly EnvFlag[] = [
  { flag: 'transfer-buffer-size', env: ['CACHE_TRANSFER_BUFFER_SIZE'], kind: 'int', describe: 'Buffer size in bytes for streaming cache transfer', support: warned('ci-runner streams with Node\'s own buffers') },
  { flag: 'chunk-size', env: ['CACHE_CHUNK_SIZE'], kind: 'int', describe: 'Chunk size in bytes for parallel cache transfer', support: warned('ci-runner transfers a cache in one stream') },
  { flag: 'concurrency', env: ['CACHE_CONCURRENCY'], kind: 'int', describe: 'Concurrent chunks for parallel cache transfer', support: warned('ci-runner transfers a cache in one stream') },
  { flag: 'env-file', env: [], kind: 'string', describe: 'Filename containing environment variables to read' },
];

const GOCLOUD: EnvFlag = { flag: 'gocloud-url', env: [], kind: 'string', describe: 'Go Cloud URL of remote cache resource (requires credentials)' };

export const CACHE_EXTRACTOR_FLAGS: readonly EnvFlag[] = [
  { flag: 'file', env: [], kind: 'string', describe: 'The file containing your cache artifacts' },
  { flag: 'url', env: [], kind: 'string', describe: 'URL of remote cache resource' },
  GOCLOUD,
  { flag: 'alternate-url', env: [], kind: 'string', describe: '(temporary) Alternate pre-signed URL of remote cache resource' },
  { flag: 'alternate-gocloud-url', env: [], kind: 'string', describe: '(temporary) Alternate Go Cloud URL of remote cache resource' },
  { flag: 'head-url', env: [], kind: 'string', describe: '(temporary) HEAD pre-signed URL for primary cache existence check' },
  { flag: 'alternate-head-url', env: [], kind: 'string', describe: '(temporary) HEAD pre-signed URL for alternate cache existence check' },
  { flag: 'timeout', env: [], kind: 'int', describe: 'Overall timeout for cache downloading request (in minutes)' },
  ...retry('download'),
  METER,
  ...CACHE_TRANSFER,
];

export const CACHE_ARCHIVER_FLAGS: readonly EnvFlag[] = [
  ...ARCHIVER,
  { flag: 'file', env: [], kind: 'string', describe: 'The path to file' },
  { flag: 'alternate-file', env: [], kind: 'string', describe: '(temporary) Alternate local cache file path to rename to --file if --file does not exist' },
  { flag: 'url', env: [], kind: 'string', describe: 'URL of remote cache resource (pre-signed URL)' },
  { flag: 'check-url', env: [], kind: 'string', describe: '(temporary) Pre-signed HEAD URL to check whether the primary cache object already exists' },
  GOCLOUD,
  { flag: 'timeout', env: [], kind: 'int', describe: 'Overall timeout for cache uploading request (in minutes)' },
  { flag: 'header', env: [], kind: 'list', describe: "HTTP headers to send with PUT request (in form of 'key:value')" },
  { flag: 'metadata', env: ['CACHE_METADATA'], kind: 'string', describe: 'Metadata for the cache artifact (JSON encoded key-value-pairs)' },
  { flag: 'compression-level', env: ['CACHE_COMPRESSION_LEVEL'], kind: 'string', describe: 'Compression level (fastest, fast, default, slow, slowest)' },
  { flag: 'compression-format', env: ['CACHE_COMPRESSION_FORMAT'], kind: 'string', describe: 'Compression format (zip, tarzstd, zipzstd)' },
  { flag: 'max-uploaded-archive-size', env: ['CACHE_MAX_UPLOADED_ARCHIVE_SIZE'], kind: 'int', min: 0, describe: 'Limit the size of the cache archive being uploaded to cloud storage, in bytes.' },
  ...retry('upload'),
  METER,
  ...CACHE_TRANSFER,
];
