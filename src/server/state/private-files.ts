/**
 * The data dir holds the admin token, the registration and runner tokens, masked pipeline variables,
 * traces and artifacts: only the server's user may read it. It and every directory the server makes
 * in it are 0700, every file 0600, whatever the umask (a mode given at creation can only lose bits to
 * the umask, never gain them). A data dir an earlier version left open to others (0755, files 0644) is
 * tightened at start with a warning; one the server cannot tighten (another user's) is refused.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log/index.js';
import { CiRunnerError } from '../../util/errors.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * What the server writes at the top of a data dir (state.ts, journal.ts, traces.ts, artifacts.ts):
 * only these are tightened, so a data dir pointed at a directory holding other things (a home
 * directory) does not have those changed.
 */
const OWN_ENTRY = /^(?:state\.json|server\.lock|journal-\d+\.log(?:\.dropped-\d+)?|.+\.tmp-\d+|traces|artifacts|tmp)$/;

/** Creates `dir` 0700, or makes an existing one and the server's files in it private. Throws `DATA_DIR_INSECURE` when it cannot. */
export function preparePrivateDir(dir: string, logger: Logger): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const before = lstatSync(dir).mode & 0o777;
  let fixed = tighten(dir, lstatSync(dir));
  for (const name of readdirSync(dir)) if (OWN_ENTRY.test(name)) fixed += tightenTree(join(dir, name));
  if (fixed > 0) {
    logger.warn({ dataDir: dir, mode: before.toString(8), fixed }, `the data dir ${dir} was open to other users (${fixed} entries with group or other access; the dir's mode was ${before.toString(8)}); made it private: 0700, its files 0600`);
  }
}

/** Tightens `path` and, for a directory, everything under it; returns how many entries changed. Symbolic links are left alone. */
function tightenTree(path: string): number {
  const stats = lstatSync(path);
  let fixed = tighten(path, stats);
  if (stats.isDirectory()) for (const name of readdirSync(path)) fixed += tightenTree(join(path, name));
  return fixed;
}

/** Takes group and other bits off one entry (not a link); 1 when it had any. */
function tighten(path: string, stats: Stats): number {
  if (stats.isSymbolicLink() || (stats.mode & 0o077) === 0) return 0;
  try {
    chmodSync(path, stats.mode & 0o700);
  } catch (error) {
    throw new CiRunnerError(
      'DATA_DIR_INSECURE',
      `${path} in the data dir is open to other users (mode ${(stats.mode & 0o777).toString(8)}) and could not be made private (${(error as Error).message}); it holds tokens and secrets: chmod -R go-rwx it as its owner, or pick another --data-dir`,
      { cause: error },
    );
  }
  return 1;
}
