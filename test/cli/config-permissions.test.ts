/**
 * config.toml holds runner tokens: the commands that use them say so when others can read the file,
 * naming it and the fix, and `run` will not start from a file anyone can change.
 */
import { chmod, chown, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, cli, NODE_CLI } from './cli.js';
import { waitUntil } from './helpers.js';
import { ensureTestUser, isRoot } from '../helpers/job-user.js';

/** A config with one runner whose coordinator does not answer, at `mode`. */
async function configAt(mode: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-perm-'));
  const path = join(dir, 'config.toml');
  await writeFile(path, `check_interval = 1\n[[runners]]\n  name = "perm"\n  url = "http://127.0.0.1:9/"\n  token = "t0ken-perm-test"\n  builds_dir = "${join(dir, 'builds')}"\n  cache_dir = "${join(dir, 'cache')}"\n`);
  await chmod(path, mode);
  return path;
}

const count = (text: string, part: string): number => text.split(part).length - 1;

describe('config.toml that others can read or write', () => {
  it('list, verify and run-once warn once about a 0644 file, naming it and the fix', async () => {
    const path = await configAt(0o644);
    const fix = `chmod 600 ${path}`;
    const runs = await Promise.all([
      cli(['list', '-c', path]),
      cli(['verify', '-c', path]),
      cli(['run-once', '-c', path, '-r', 'perm', '--wait-timeout', '1s']),
    ]);
    for (const result of runs) {
      expect(count(result.all, fix), result.all).toBe(1);
      expect(result.all).toContain(`${path} is mode 0644: its group and other users can read it`);
    }
  });

  it('run warns about a 0644 file and runs', async () => {
    const path = await configAt(0o644);
    const daemon = execa('node', [...NODE_CLI, 'run', '-c', path], { reject: false, all: true, stdin: 'ignore' });
    let output = '';
    daemon.all?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitUntil(() => output.includes('ci-runner started'), 30_000, 'the daemon started');
      expect(count(output, `chmod 600 ${path}`), output).toBe(1);
    } finally {
      daemon.kill('SIGTERM');
      await daemon;
    }
  });

  it('run refuses a 0666 file with exit 2; a 0600 one gets no word', async () => {
    const open = await configAt(0o666);
    const refused = await cli(['run', '-c', open]);
    expect(refused.exitCode, refused.all).toBe(2);
    expect(refused.all).toContain(`refusing to run: ${open} is mode 0666: its group and other users can read and write it`);
    expect(refused.all).toContain(`fix with: chmod 600 ${open}`);
    const closed = await configAt(0o600);
    const listed = await cli(['list', '-c', closed]);
    expect(listed.exitCode, listed.all).toBe(0);
    expect(listed.all).not.toContain('chmod 600');
  });

  it.skipIf(!isRoot)('says nothing about the group bit the runner reads through (a Secret mounted 0440 with fsGroup), but still about others', async () => {
    const user = await ensureTestUser();
    const path = await configAt(0o440);
    await chown(path, 0, user.gid);
    await chmod(join(path, '..'), 0o755);
    const asUser = (file: string) => execa('setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', 'node', CLI, 'list', '-c', file], { reject: false, all: true, stdin: 'ignore', env: { HOME: '/tmp' } });
    const quiet = await asUser(path);
    expect(quiet.exitCode, quiet.all).toBe(0);
    expect(quiet.all).toContain('perm');
    expect(quiet.all).not.toContain('chmod');
    await chmod(path, 0o444);
    const loud = await asUser(path);
    expect(loud.all).toContain(`${path} is mode 0444: other users can read it (it holds runner tokens); fix with: chmod 440 ${path}`);
  });
});
