/**
 * `cache-extractor` and `cache-archiver`, GitLab Runner 19's helper commands
 * (commands/helpers/cache_*.go), run by the custom executor's stage scripts where the job runs: the
 * local archive `--file` (relative to the working directory, the project dir) fetched from `--url` when
 * one is given (a URL the runner signed, so the store's credentials never reach the job) and extracted
 * into the working directory; or the working directory's `--path`s zipped into `--file` unless nothing
 * is newer than it, then PUT to `--url` with its `--header`s. Go Cloud URLs (credentials handed to the
 * job) are refused: ci-runner's runner always signs.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createArchive } from '../../artifacts/create.js';
import { extractArchive } from '../../artifacts/extract.js';
import { megabytes } from '../../artifacts/naming.js';
import { excludeEntries, selectFiles } from '../../artifacts/select.js';
import { cleanUrl, downloadCacheFile, selectCacheSource, uploadCacheFile, writeCacheMetadata, cacheTransport, type SignedRequest, type TransferOptions } from '../../cache/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MINUTES } from '../../cache/plan.js';
import { parseDurationMs } from '../../util/duration.js';
import { fatal, helperSignal, say, warn } from './context.js';

interface CacheValues {
  file?: string;
  url?: string;
  'gocloud-url'?: string;
  timeout?: number;
  retry?: number;
  'retry-time'?: string;
}

export interface ExtractorValues extends CacheValues {
  'alternate-url'?: string;
  'head-url'?: string;
  'alternate-head-url'?: string;
  'alternate-gocloud-url'?: string;
}

export interface ArchiverValues extends CacheValues {
  path?: string[];
  exclude?: string[];
  untracked?: boolean;
  'alternate-file'?: string;
  'check-url'?: string;
  header?: string[];
  metadata?: string;
  'compression-level'?: string;
  'compression-format'?: string;
  'max-uploaded-archive-size'?: number;
}

const NO_GOCLOUD = 'Go Cloud URLs hand the store\'s credentials to the job; ci-runner\'s runner signs a URL for each transfer instead (use --url)';

function transfer(values: CacheValues, signal: AbortSignal): TransferOptions {
  const minutes = values.timeout !== undefined && values.timeout > 0 ? values.timeout : DEFAULT_REQUEST_TIMEOUT_MINUTES;
  return {
    transport: cacheTransport(),
    requestTimeoutMs: minutes * 60_000,
    signal,
    retries: values.retry ?? 2,
    retryDelayMs: parseDurationMs(values['retry-time'] ?? '1s') ?? 1000,
    onRetry: (error) => warn(`Retrying... (${error.message})`),
  };
}

/** Exits 1 with a warning, as GitLab Runner's extractor does for a cache that is not there. */
function missing(message: string): never {
  warn(message);
  throw fatal(message);
}

/** Signed requests as the flags give them: no headers (a pre-signed URL carries its signature). */
const signed = (url: string): SignedRequest => ({ url: new URL(url), headers: {} });

/**
 * `--url`, or `--alternate-url` (the key under the other FF_HASH_CACHE_KEYS naming) when only it has an
 * object or its object is newer, as GitLab Runner 19's extractor chooses: dated by `--head-url` and
 * `--alternate-head-url` when given, else by a one-byte GET of the URL itself.
 */
async function chooseSource(url: string, values: ExtractorValues, options: TransferOptions): Promise<SignedRequest> {
  const primary = { get: signed(url), ...(values['head-url'] ? { head: signed(values['head-url']) } : {}) };
  if (!values['alternate-url']) return primary.get;
  const alternate = { get: signed(values['alternate-url']), ...(values['alternate-head-url'] ? { head: signed(values['alternate-head-url']) } : {}) };
  const chosen = await selectCacheSource(primary, alternate, options);
  if (chosen.line) say(chosen.line);
  return chosen.source.get;
}

export async function cacheExtractor(values: ExtractorValues): Promise<void> {
  if (values['gocloud-url'] || values['alternate-gocloud-url']) throw fatal(NO_GOCLOUD);
  if (!values.file) missing('Missing cache file');
  const file = resolve(values.file);
  const signal = helperSignal();
  if (values.url) {
    const options = transfer(values, signal);
    const source = await chooseSource(values.url, values, options);
    const outcome = await downloadCacheFile(source, file, options).catch((error: unknown) => missing((error as Error).message));
    if (outcome.kind === 'missing') missing('file does not exist');
    if (outcome.kind === 'up-to-date') say(`${file.split('/').pop() ?? ''} is up to date`);
    else say(`Downloaded cache from ${cleanUrl(source.url)}${outcome.etag ? `  ETag=${outcome.etag}` : ''} (${megabytes(outcome.bytes)})`);
  } else {
    say('No URL provided, cache will not be downloaded from shared cache server. Instead a local version of cache will be extracted.');
  }
  if (!(await stat(file).then((s) => s.isFile(), () => false))) missing('Cache file does not exist');
  try {
    const summary = await extractArchive(file, process.cwd(), signal);
    say(`Extracted ${summary.entries} entries (${megabytes(summary.bytes)})`);
  } catch (error) {
    throw fatal((error as Error).message);
  }
}

/** CACHE_COMPRESSION_LEVEL's names as deflate levels (GitLab Runner's fastzip levels; `default` is zlib's). */
const LEVELS: Readonly<Record<string, number | undefined>> = { fastest: 0, fast: 1, default: undefined, slow: 7, slowest: 9 };

export async function cacheArchiver(values: ArchiverValues): Promise<void> {
  if (values['gocloud-url']) throw fatal(NO_GOCLOUD);
  if (!values.file) throw fatal('Missing --file');
  const file = resolve(values.file);
  const signal = helperSignal();
  const format = (values['compression-format'] ?? '').toLowerCase();
  if (format !== '' && format !== 'zip') warn(`compression format ${JSON.stringify(format)} is not supported by ci-runner; the cache is written as zip`);
  await renameAlternate(file, values['alternate-file']);
  const selected = await selectFiles(process.cwd(), { paths: values.path ?? [], ...(values.untracked ? { untracked: true } : {}) }, say, signal);
  const { selection } = await excludeEntries(selected, values.exclude ?? []);
  if (selection.entries.length === 0) {
    warn('No files to cache.');
    return;
  }
  const archive = await stat(file).catch(() => undefined);
  if (archive && selection.entries.every((entry) => entry.mtime.getTime() <= archive.mtimeMs)) {
    say('Archive is up to date!');
    return;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  let size: number;
  try {
    const level = LEVELS[values['compression-level'] ?? ''];
    size = await createArchive(process.cwd(), selection.entries, temp, 'zip', signal, level === undefined ? {} : { compressionLevel: level });
    await rename(temp, file);
  } catch (error) {
    throw fatal((error as Error).message);
  } finally {
    await rm(temp, { force: true });
  }
  await writeCacheMetadata(file, parseMetadata(values.metadata));
  say(`Created cache: ${selection.files} file(s), ${megabytes(selection.bytes)} (${megabytes(size)} compressed)`);
  if (!values.url) return;
  const max = values['max-uploaded-archive-size'] ?? 0;
  if (max > 0 && size > max) {
    say(`Cache archive size (${size}) is too big (Limit is set to ${max}). Cache will be stored only locally.`);
    return;
  }
  const url = new URL(values.url);
  say(`Uploading ${file.split('/').pop() ?? ''} to ${cleanUrl(url)}`);
  await uploadCacheFile({ url, headers: parseHeaders(values.header ?? []) }, file, transfer(values, signal)).catch((error: unknown) => {
    throw fatal((error as Error).message);
  });
}

/** `--alternate-file` becomes `--file` when only it exists (a cache kept under the other naming scheme). */
async function renameAlternate(file: string, alternate: string | undefined): Promise<void> {
  if (!alternate || resolve(alternate) === file) return;
  if (await stat(file).then(() => true, () => false)) return;
  if (!(await stat(alternate).then(() => true, () => false))) return;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await rename(alternate, file).then(() => say('Renamed alternate cache file to primary'), (error: unknown) => warn(`Failed to rename alternate cache file to primary: ${(error as Error).message}`));
}

/** `Key: value` headers, as GitLab Runner splits them (at the first colon; a header without one is dropped). */
function parseHeaders(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of raw) {
    const at = line.indexOf(':');
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

function parseMetadata(text: string | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  } catch {
    // as below
  }
  warn(`metadata ${JSON.stringify(text.slice(0, 60))} is not a JSON object of strings; none written`);
  return {};
}
