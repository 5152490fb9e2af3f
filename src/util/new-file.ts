/**
 * Writing a file of the runner's own (a stage script, a file variable, a delivery record) in a
 * directory a job's container could have written into: whatever is at the path is removed first (a
 * link itself, never what it points at) and the file is created exclusively, so it is never written
 * through a link planted there, and its mode is set on the open file, not through the path.
 */
import { constants } from 'node:fs';
import { open, rm, unlink } from 'node:fs/promises';

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `data` to a new file at `path` with exactly `mode` (the umask does not apply), owned by
 * `owner` when given. Whatever was at `path`, a directory too with `replaceDir`, is removed first.
 */
export async function writeNewFile(path: string, data: string | Uint8Array, mode: number, options: { owner?: { uid: number; gid: number }; replaceDir?: boolean } = {}): Promise<void> {
  if (options.replaceDir) await rm(path, { force: true, recursive: true });
  else await unlinkIfThere(path);
  const handle = await open(path, CREATE_NEW, mode);
  try {
    await handle.writeFile(data);
    await handle.chmod(mode);
    if (options.owner) await handle.chown(options.owner.uid, options.owner.gid);
  } finally {
    await handle.close();
  }
}

/** Removes the file or link at `path`, if any (a directory there throws: EISDIR). One call, where rm stats first. */
async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
