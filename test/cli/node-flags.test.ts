/** The daemon's V8 flags reach node from the `ci-runner` bin (its shebang) and from the systemd unit. */
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../src/util/node-flags.js';
import { DEFAULT_UNIT_OPTIONS, renderUnit } from '../../src/service/unit.js';
import { CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

describe('daemon node flags', () => {
  it('the bin, run as a command, starts node with them', async () => {
    const first = (await readFile(CLI, 'utf8')).split('\n')[0];
    expect(first).toBe(`#!/usr/bin/env -S node ${DAEMON_NODE_FLAGS.join(' ')}`);
    // As npm installs it: a symlink to the executable main.js, run by the kernel through the shebang.
    const d = await workDirs();
    const bin = join(d.root, 'ci-runner');
    await symlink(CLI, bin);
    const config = join(d.root, 'config.toml');
    await writeFile(config, 'log_format = "json"\n');
    const child = execa(bin, ['run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    let output = '';
    child.all?.on('data', (c: Buffer) => (output += c.toString()));
    try {
      await waitUntil(() => output.includes('ci-runner started'), 30_000, 'daemon started');
      const cmdline = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0');
      expect(cmdline).toEqual(expect.arrayContaining([...DAEMON_NODE_FLAGS]));
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });

  it('the systemd unit passes them before the CLI', () => {
    const execStart = /^ExecStart=(.*)$/m.exec(renderUnit(DEFAULT_UNIT_OPTIONS))?.[1] ?? '';
    expect(execStart.startsWith(`/usr/bin/node ${DAEMON_NODE_FLAGS.join(' ')} /usr/local/lib/node_modules/ci-runner/dist/cli/main.js run`)).toBe(true);
  });
});
