import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { systemdMissingReason } from '../../src/service/systemd.js';
import { DAEMON_NODE_FLAGS } from '../../src/util/node-flags.js';
import { cli, CLI } from './cli.js';

// These tests run where systemd is not PID 1 (containers, CI); on a systemd machine the
// "no systemd" cases are skipped rather than touching the real service manager.
const noSystemd = (await systemdMissingReason()) !== undefined;
if (!noSystemd) console.log('skipping the "no systemd" cases: this machine runs systemd');

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'ci-runner-service-'));
}

describe('ci-runner install / uninstall --unit-dir', () => {
  it('writes a unit that starts this node and CLI with the config, working directory and a stop timeout past shutdown_timeout', async () => {
    const dir = await tempDir();
    const config = join(dir, 'config.toml');
    await writeFile(config, 'shutdown_timeout = 300\n');
    const result = await cli(['install', '--unit-dir', join(dir, 'units'), '--service', 'ci-runner-test', '--config', config, '--working-directory', dir]);
    expect(result.all).toContain('wrote');
    expect(result.exitCode).toBe(0);
    const unit = await readFile(join(dir, 'units', 'ci-runner-test.service'), 'utf8');
    expect(unit).toContain(`ExecStart=${process.execPath} ${DAEMON_NODE_FLAGS.join(' ')} ${CLI} run --config ${config}\n`);
    expect(unit).toContain(`WorkingDirectory=${dir}\n`);
    expect(unit).toContain('TimeoutStopSec=360\n');
    expect(unit).toContain('StateDirectory=ci-runner-test\n');
    expect((await stat(join(dir, 'units', 'ci-runner-test.service'))).mode & 0o777).toBe(0o644);
    // The ExecStart line works as written (absolute paths; these have no spaces to unquote).
    const words = /^ExecStart=(.*)$/m.exec(unit)![1]!.split(' ');
    expect((await execa(words[0]!, [...words.slice(1, words.indexOf('run')), '--version'], { reject: false })).exitCode).toBe(0);
    const analyze = await execa('systemd-analyze', ['verify', join(dir, 'units', 'ci-runner-test.service')], { reject: false, all: true, env: { SYSTEMD_LOG_TARGET: 'console' } });
    if (analyze.exitCode !== undefined) expect(analyze.all).toBe(''); // undefined: systemd-analyze is not installed

    const again = await cli(['install', '--unit-dir', join(dir, 'units'), '--service', 'ci-runner-test', '--config', config]);
    expect(again.exitCode).toBe(1);
    expect(again.all).toContain('already exists');

    const removed = await cli(['uninstall', '--unit-dir', join(dir, 'units'), '--service', 'ci-runner-test']);
    expect(removed.exitCode).toBe(0);
    await expect(stat(join(dir, 'units', 'ci-runner-test.service'))).rejects.toThrow();
  });

  it('refuses an unknown --user and an invalid service name with exit 2, writing nothing', async () => {
    const dir = await tempDir();
    const user = await cli(['install', '--unit-dir', dir, '--config', join(dir, 'c.toml'), '--user', 'no-such-user-ci-runner']);
    expect(user.exitCode).toBe(2);
    expect(user.all).toContain('user "no-such-user-ci-runner"');
    const dash = await cli(['install', '--unit-dir', dir, '--config', join(dir, 'c.toml'), '--user=-s']);
    expect(dash.exitCode).toBe(2);
    expect(dash.all).toContain('not a valid user name');
    const name = await cli(['install', '--unit-dir', dir, '--service', '../evil']);
    expect(name.exitCode).toBe(2);
    await expect(stat(join(dir, 'ci-runner.service'))).rejects.toThrow();
  });

  it("takes GitLab Runner's --syslog into the unit's run command, and refuses --init-user and --user-service (exit 2)", async () => {
    const dir = await tempDir();
    const result = await cli(['install', '--unit-dir', dir, '--config', join(dir, 'c.toml'), '--syslog']);
    expect(result.exitCode, result.all).toBe(0);
    expect(/^ExecStart=.* run --config \S+ --syslog$/m.test(await readFile(join(dir, 'ci-runner.service'), 'utf8'))).toBe(true);
    const init = await cli(['install', '--unit-dir', join(dir, 'other'), '--config', join(dir, 'c.toml'), '--init-user', 'gitlab-runner']);
    expect(init.exitCode).toBe(2);
    expect(init.stderr).toContain('--init-user: the daemon runs as root');
    const user = await cli(['status', '--user-service']);
    expect(user.exitCode).toBe(2);
    expect(user.stderr).toContain('systemd user services are not supported');
  });

  it('warns that the config does not exist yet but still installs', async () => {
    const dir = await tempDir();
    const result = await cli(['install', '--unit-dir', dir, '--config', join(dir, 'later.toml')]);
    expect(result.exitCode).toBe(0);
    expect(result.all).toContain('does not exist yet');
  });
});

describe.skipIf(!noSystemd)('service commands without systemd', () => {
  it.each([['status'], ['start'], ['stop'], ['restart'], ['install'], ['uninstall']])('%s says systemd is not available and exits 69', async (command) => {
    const result = await cli([command]);
    expect(result.all).toContain('systemd is not available here');
    expect(result.exitCode).toBe(69);
  });
});
