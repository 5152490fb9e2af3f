/**
 * Full logs of jobs whose trace was cut by `output_limit`. The notice at the end of such a trace tells
 * the user the full log is on the runner at `<project>.tmp/build-<id>/trace.log`, so when the job is
 * over that file stays where the notice says, alone in its dir, instead of going with the rest of the
 * job's state. Kept logs are removed after {@link KEPT_LOG_RETENTION_MS}, so they cannot fill the disk
 * of a runner that keeps hitting the limit.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

/** How long a kept full log stays on disk: a week, long enough to look at a failed job. */
export const KEPT_LOG_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Removes everything in `stateDir` but the full log at `logPath`. */
export async function keepOnlyFullLog(stateDir: string, logPath: string): Promise<void> {
  const keep = basename(logPath);
  for (const entry of await readdir(stateDir)) {
    if (entry !== keep) await rm(join(stateDir, entry), { recursive: true, force: true });
  }
}

/** True when `dir` holds nothing but a kept full log (named `logName`). */
export async function isKeptLogDir(dir: string, logName: string): Promise<boolean> {
  const entries = await readdir(dir).catch(() => undefined);
  return entries !== undefined && entries.length === 1 && entries[0] === logName;
}

/**
 * Removes kept logs under `tmpDir` (a project's `<project>.tmp`) older than the retention. Returns
 * how many it removed; never rejects.
 */
export async function pruneKeptLogs(tmpDir: string, logName: string, now = Date.now(), retentionMs = KEPT_LOG_RETENTION_MS): Promise<number> {
  const entries = await readdir(tmpDir).catch(() => [] as string[]);
  let removed = 0;
  for (const entry of entries) {
    if (!/^build-\d+$/.test(entry)) continue;
    const dir = join(tmpDir, entry);
    if (!(await isKeptLogDir(dir, logName))) continue;
    const modified = (await stat(join(dir, logName)).catch(() => undefined))?.mtimeMs;
    if (modified !== undefined && now - modified > retentionMs) {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      removed += 1;
    }
  }
  return removed;
}
