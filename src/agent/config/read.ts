/**
 * Reads a config file's text, refusing anything that is not a regular file of sensible size before
 * reading a byte: `--config` pointed at a FIFO would otherwise block `list` and `run` forever, and
 * /dev/zero or a multi-gigabyte file would fill memory. The file is opened non-blocking (opening a FIFO
 * with no writer would block) and checked through the open handle, so it cannot be swapped in between.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfigError } from './errors.js';

/** Far more than any config.toml with hundreds of runners needs. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** The file's text; throws ENOENT-coded errors as they are, a ConfigError for a file that is not one. */
export async function readConfigText(path: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ConfigError(`${path}: not a regular file (${kindOf(stats)}); --config must name a config.toml file`);
    if (stats.size > MAX_CONFIG_BYTES) throw new ConfigError(`${path}: ${stats.size} bytes is too large for a config file (at most ${MAX_CONFIG_BYTES})`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

function kindOf(stats: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a file';
}
