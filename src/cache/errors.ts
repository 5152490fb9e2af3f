/**
 * Errors of the distributed cache. None of them fails a job (a cache problem is a warning line, as in
 * GitLab Runner); callers branch on `code` to word that line. Messages never hold a presigned URL's
 * query (its signature, a SAS token): only `cleanUrl` forms of URLs go into them.
 */
import { CiRunnerError } from '../util/errors.js';

export type CacheErrorCode =
  /** The store answered a GET with an error other than 404, or could not be reached, after the retries. */
  | 'CACHE_DOWNLOAD_FAILED'
  /** The store refused or lost an upload, or could not be reached, after the retries. */
  | 'CACHE_UPLOAD_FAILED'
  /** No URL could be signed: the store's settings or credentials are incomplete or unusable. */
  | 'CACHE_STORE_UNUSABLE'
  /** A `policy` that is none of pull, push, pull-push once expanded: GitLab Runner fails the job. */
  | 'CACHE_POLICY_UNKNOWN';

export class CacheError extends CiRunnerError {
  declare readonly code: CacheErrorCode;
  /** Worth another try (a network failure, a timeout, a 5xx); set on transfer errors. */
  readonly retryable: boolean;

  constructor(code: CacheErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(code, message, options);
    this.retryable = options?.retryable ?? false;
  }
}

/** `url` without user info, query and fragment: what a log line may say of a presigned URL (GitLab Runner's CleanURL). */
export function cleanUrl(url: URL): string {
  const clean = new URL(url.href);
  clean.username = '';
  clean.password = '';
  clean.search = '';
  clean.hash = '';
  return clean.href;
}
