/**
 * Watches config.toml for `run` (chokidar): an edit in place, an editor replacing the file, or
 * `register` renaming its temp file over it. The directory is watched (depth 0, only this file
 * passes the filter), so a replaced file is followed by name rather than by its old inode. Events
 * are debounced: an editor's save (truncate, write, rename) arrives as one reload.
 */
import { basename, dirname, resolve } from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { Logger } from '../log/index.js';

export interface ConfigWatcher {
  close(): Promise<void>;
}

export interface WatchOptions {
  /** Quiet time after the last event before `onChange`; default 300 ms. */
  debounceMs?: number;
  logger: Logger;
  /** The file is there (written or replaced): read it again. */
  onChange: () => void;
  /** The file is gone. */
  onDelete: () => void;
}

/** Starts watching `path`; chokidar is loaded here, so `run` without a watch does not pay for it. */
export async function watchConfig(path: string, options: WatchOptions): Promise<ConfigWatcher> {
  const { watch } = await import('chokidar');
  const file = resolve(path);
  const dir = dirname(file);
  const watcher: FSWatcher = watch(dir, {
    ignoreInitial: true,
    depth: 0,
    ignored: (p: string) => p !== dir && p !== file,
  });
  const debounceMs = options.debounceMs ?? 300;
  let timer: NodeJS.Timeout | undefined;
  let gone = false;
  const fire = (): void => {
    timer = undefined;
    if (gone) options.onDelete();
    else options.onChange();
  };
  const schedule = (deleted: boolean): void => {
    gone = deleted;
    clearTimeout(timer);
    timer = setTimeout(fire, debounceMs);
  };
  watcher.on('all', (event, p) => {
    if (resolve(p) !== file) return;
    if (event === 'unlink') schedule(true);
    else if (event === 'add' || event === 'change') schedule(false);
  });
  watcher.on('error', (error) => options.logger.warn({ err: error }, `watching ${basename(file)} failed; reload with SIGHUP`));
  await new Promise<void>((ready) => watcher.once('ready', ready));
  return {
    close: async () => {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
