/** `--config` naming something that is not a regular file is refused at once, never read or waited on. */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { cli } from './cli.js';

describe('a config path that is not a regular file', () => {
  it('is refused with exit 2 by list, run, verify and register instead of hanging on a FIFO', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-fifo-'));
    const fifo = join(dir, 'config.toml');
    await promisify(execFile)('mkfifo', [fifo]);
    const commands = [
      ['list', '-c', fifo],
      ['run', '-c', fifo],
      ['verify', '-c', fifo],
      // Refused before the coordinator is asked for a runner (the URL would not answer anyway).
      ['register', '-c', fifo, '--url', 'http://127.0.0.1:9/', '--registration-token', 'x', '--non-interactive'],
    ];
    const results = await Promise.all(commands.map((args) => cli(args)));
    results.forEach((result, i) => {
      expect(result.exitCode, `${commands[i]![0]}: ${result.all}`).toBe(2);
      expect(result.all).toContain('not a regular file (a FIFO)');
    });
  });

  it('names a directory or a device for what it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-fifo-'));
    const asDir = await cli(['list', '-c', dir]);
    expect(asDir.exitCode).toBe(2);
    expect(asDir.all).toContain('not a regular file (a directory)');
    const device = await cli(['list', '-c', '/dev/zero']);
    expect(device.exitCode).toBe(2);
    expect(device.all).toContain('(a character device)');
  });
});
