/**
 * Reading a file of the runner's own back from a directory something else may have written into (a
 * job's state dir, read again by a restarted daemon): a link at the path is never followed and a
 * FIFO never blocks the open; anything but a regular file is refused.
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { CiRunnerError } from './errors.js';

const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** `path` is a link, or not a regular file: what the runner wrote there was replaced. */
export class NotRegularFileError extends CiRunnerError {
  constructor(path: string, options?: { cause?: unknown }) {
    super('NOT_REGULAR_FILE', `${path} is a link or not a regular file; the runner wrote a file there, so something replaced it`, options);
  }
}

/** Opens `path` for reading if it is a regular file; ENOENT passes through as it is. */
export async function openRegularFile(path: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, READ_NO_FOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new NotRegularFileError(path, { cause: error });
    throw error;
  }
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  throw new NotRegularFileError(path);
}
