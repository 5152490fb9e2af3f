/**
 * Errors of the artifacts stages and of archives (the cache's too). Callers (the agent's job stages) branch on `code`:
 * `JOB_FORBIDDEN` means the server stopped the job; the others fail the stage with a message that
 * says what to do next.
 */
import { CiRunnerError } from '../util/errors.js';

export type ArtifactsErrorCode =
  /** E7 answered 413: the archive is over the server's size limit. */
  | 'ARTIFACTS_TOO_LARGE'
  /** E7 answered 403: the job is no longer running on the server. */
  | 'JOB_FORBIDDEN'
  /** E7 failed for good (other final status, or retries exhausted). */
  | 'ARTIFACTS_UPLOAD_FAILED'
  /** E8 failed for good, or the file had the wrong size after every attempt. */
  | 'ARTIFACTS_DOWNLOAD_FAILED'
  /**
   * Refused by the validation pass, so nothing was written: an entry would land outside the project
   * dir or in its .git, a symlink would lead there once the archive is extracted, the archive
   * contradicts itself (an entry below a file it made), or an entry is a device/fifo.
   */
  | 'ARCHIVE_UNSAFE'
  /** Not a gzip/tar/zip file, or damaged. */
  | 'ARCHIVE_CORRUPT'
  /** Writing an entry failed (disk full, permissions), or the project dir changed while extracting. */
  | 'ARCHIVE_EXTRACT_FAILED'
  /** The archive holds more than `artifacts_extract_limit` leaves for the job: nothing of it was written. */
  | 'ARCHIVE_OVER_LIMIT'
  /** The disk or quota filled up (ENOSPC, EDQUOT) downloading or extracting: what was written is removed. */
  | 'DISK_FULL'
  /** Building the archive failed (a selected file vanished or could not be read). */
  | 'ARCHIVE_CREATE_FAILED';

export class ArtifactsError extends CiRunnerError {
  declare readonly code: ArtifactsErrorCode;

  constructor(code: ArtifactsErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Rethrows the signal's reason when it has aborted, so aborts never turn into warnings. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason;
}
