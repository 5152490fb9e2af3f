/**
 * A full disk or an exhausted quota while downloading or extracting is not a broken archive and not
 * worth a retry: the job fails at once with a line that says so, after what it wrote is removed.
 */
import { ArtifactsError } from './errors.js';

const DISK_FULL: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
};

/** `ENOSPC` or `EDQUOT` when `error`, or any error in its `cause` chain, is one. */
export function diskFullCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth += 1) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code !== undefined && code in DISK_FULL) return code;
  }
  return undefined;
}

/**
 * The DISK_FULL error: `doing` says what failed ("extracting into /b/p"), `cleaned` what was
 * removed. An extraction also points at artifacts_extract_limit, which stops such archives unwritten.
 */
export function diskFull(code: string, doing: 'downloading' | 'extracting', path: string, cleaned: string, cause: unknown): ArtifactsError {
  const hint = doing === 'extracting' ? ', or cap what a job may extract with artifacts_extract_limit' : '';
  return new ArtifactsError('DISK_FULL', `${DISK_FULL[code] ?? code} (${code}) while ${doing} ${doing === 'extracting' ? 'into' : 'to'} ${path}; ${cleaned}. Free space on that filesystem (the runner's builds_dir)${hint}`, { cause });
}
