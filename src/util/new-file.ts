/**
 * Writing a file of the runner's own (a stage script, a file variable, a delivery record) in a
 * directory a job's container could have written into: whatever is at the path is removed first (a
 * link itself, never what it points at) and the file is created exclusively, so it is never written
 * through a link planted there, and its mode is set on the open file, not through the path.
 */
import { constants } from 'node:fs';
import { open, rm, unlink, type FileHandle } from 'node:fs/promises';

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `data` to a new file at `path` with exactly `mode` (the umask does not apply), owned by
 * `owner` when given. Whatever was at `path`, a directory too with `replaceDir`, is removed.
 */
export async function writeNewFile(path: string, data: string | Uint8Array, mode: number, options: { owner?: { uid: number; gid: number }; replaceDir?: boolean } = {}): Promise<void> {
  const handle = await createNew(path, mode, options.replaceDir ?? false);
  try {
    await handle.writeFile(data);
    await handle.chmod(mode);
    if (options.owner) await handle.chown(options.owner.uid, options.owner.gid);
  } finally {
    await handle.close();
  }
}

/**
 * Creates `path` exclusively. Mostly nothing is there (a fresh state dir), so the open comes first;
 * when something is (EEXIST: a file, a link, dangling or not, or a directory), it is removed — a
 * directory only with `replaceDir`, else unlink's EISDIR is thrown — and the open is tried once more.
 */
async function createNew(path: string, mode: number, replaceDir: boolean): Promise<FileHandle> {
  try {
    return await open(path, CREATE_NEW, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (replaceDir) await rm(path, { force: true, recursive: true });
  else await unlink(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  return open(path, CREATE_NEW, mode);
}
