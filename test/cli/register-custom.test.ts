/**
 * `register --executor custom` and `run-once --executor custom` with GitLab Runner 19's `--custom-*`
 * flags and their environment names (CUSTOM_CONFIG_EXEC, …): written as a [runners.custom] table the
 * loader reads back, and a job run by the registered entry through real driver scripts. Build first.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { CUSTOM_FLAGS } from '../../src/cli/custom-flags.js';
import { logText } from '../helpers/log-text.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { writeDrivers } from '../executors/custom/drivers.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('register --executor custom', () => {
  it('writes the --custom-* flags and their environment names into [runners.custom], and the entry runs a job through its drivers', async () => {
    const { root, builds, cache } = await workDirs();
    const drivers = await writeDrivers(root);
    const config = join(root, 'config.toml');
    const reg = await cli(
      [
        'register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'vm', '--executor', 'custom', '--builds-dir', builds, '--cache-dir', cache,
        '--custom-config-exec', drivers.config, '--custom-config-args', 'config-arg', '--custom-config-args', 'second arg', '--custom-config-exec-timeout', '120',
        '--custom-prepare-exec', drivers.prepare, '--custom-prepare-args', 'prepare-arg',
        '--custom-run-exec', drivers.run, '--custom-run-args', 'run-arg', '--custom-graceful-kill-timeout', '30',
        '--custom_build_dir-enabled',
      ],
      { env: { CUSTOM_CLEANUP_EXEC: drivers.cleanup, CUSTOM_CLEANUP_EXEC_TIMEOUT: '90', CUSTOM_FORCE_KILL_TIMEOUT: '5', CUSTOM_PREPARE_EXEC_TIMEOUT: '60' } },
    );
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).not.toContain('WARNING');
    const text = await readFile(config, 'utf8');
    expect(text).toContain('executor = "custom"');
    expect(text).toContain('  [runners.custom]\n');
    expect(text).toContain('  [runners.custom_build_dir]\n');
    const { config: parsed, warnings } = parseConfig(text, config);
    expect(warnings).toEqual([]);
    const entry = parsed.runners[0]!;
    expect(entry.custom_build_dir.enabled).toBe(true);
    expect(entry.custom).toEqual({
      config_exec: drivers.config, config_args: ['config-arg', 'second arg'], config_exec_timeout: 120_000,
      prepare_exec: drivers.prepare, prepare_args: ['prepare-arg'], prepare_exec_timeout: 60_000,
      run_exec: drivers.run, run_args: ['run-arg'],
      cleanup_exec: drivers.cleanup, cleanup_args: [], cleanup_exec_timeout: 90_000,
      graceful_kill_timeout: 30_000, force_kill_timeout: 5_000,
    });

    // The entry as written runs a job: run-single takes it from the file by name.
    const p = await t.pipeline('job:\n  script:\n    - echo "ran in a custom driver as $CI_JOB_NAME"\n');
    const run = await cli(['run-single', '-c', config, '-r', 'vm', '--max-builds', '1', '--wait-timeout', '60s'], { env: { PATH: process.env.PATH ?? '' } });
    expect(run.exitCode, run.all).toBe(0);
    const job = p.jobs[0]!;
    const log = logText(await t.server.getTrace(job.id));
    expect(log).toContain('Using Custom executor with driver test driver v1.2.3...');
    expect(log).toContain('ran in a custom driver as job');
    expect(await drivers.read('env-config')).toContain('args=config-arg second arg');
    expect(await drivers.read('env-run')).toMatch(/^args=run-arg \S+ \w+$/m);
    expect(await drivers.read('cleanup-done')).toContain('cleaned');
  });

  it('warns for a custom runner without run_exec (written as GitLab Runner writes it), and for --custom-* with another executor', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const noRun = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'norun', '--executor', 'custom', '--custom-config-exec', '/bin/true']);
    expect(noRun.exitCode, noRun.all).toBe(0);
    expect(noRun.stderr).toContain('WARNING: --custom-run-exec (CUSTOM_RUN_EXEC) is not set: every job of this runner fails until run_exec is set');
    const shell = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'sh', '--custom-config-exec', '/bin/true'], { env: { CUSTOM_RUN_EXEC: '/bin/run' } });
    expect(shell.exitCode, shell.all).toBe(0);
    expect(shell.stderr).toContain('WARNING: --custom-config-exec, CUSTOM_RUN_EXEC are ignored: the executor is shell, not custom');
    const { config: parsed } = parseConfig(await readFile(config, 'utf8'), config);
    expect(parsed.runners.map((r) => [r.name, r.executor, r.custom.config_exec, r.custom.run_exec])).toEqual([['norun', 'custom', '/bin/true', ''], ['sh', 'shell', '', '']]);
  });

  it('refuses a timeout that is not a whole number, naming where it came from, before asking the coordinator (exit 2)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const flag = await cli(['register', '-c', config, '-n', '--url', 'http://127.0.0.1:9/', '-r', 'x', '--executor', 'custom', '--custom-run-exec', '/bin/true', '--custom-config-exec-timeout', '1.5']);
    expect(flag.exitCode, flag.all).toBe(2);
    expect(flag.stderr).toContain('--custom-config-exec-timeout: expects a whole number');
    const env = await cli(['register', '-c', config, '-n', '--url', 'http://127.0.0.1:9/', '-r', 'x', '--executor', 'custom', '--custom-run-exec', '/bin/true'], { env: { CUSTOM_FORCE_KILL_TIMEOUT: 'soon' } });
    expect(env.exitCode, env.all).toBe(2);
    expect(env.stderr).toContain('CUSTOM_FORCE_KILL_TIMEOUT="soon": expects a whole number');
  });

  it('lists every --custom-* flag with its environment name in --help, as GitLab Runner names them', async () => {
    const help = await cli(['register', '--help']);
    for (const f of CUSTOM_FLAGS) {
      expect(help.stdout).toContain(`--${f.flag}`);
      for (const name of f.env) expect(help.stdout).toContain(name);
    }
    expect(help.stdout).toMatch(/--executor.*"custom"/s);
  });
});

describe('run-once --executor custom', () => {
  it('runs a job through the drivers given as --custom-* flags and environment names', async () => {
    const { token } = await t.registerRunner();
    const { root, builds, cache } = await workDirs();
    const drivers = await writeDrivers(root);
    const p = await t.pipeline('job:\n  script:\n    - echo "one job, no config file"\n');
    const run = await cli(
      ['run-once', '--url', t.url, '--token', token, '--executor', 'custom', '--builds-dir', builds, '--cache-dir', cache, '--custom-config-exec', drivers.config, '--custom-run-exec', drivers.run, '--custom-run-args', 'run-arg'],
      { env: { PATH: process.env.PATH ?? '', CUSTOM_CLEANUP_EXEC: drivers.cleanup, CUSTOM_PREPARE_EXEC: drivers.prepare } },
    );
    expect(run.exitCode, run.all).toBe(0);
    const log = logText(await t.server.getTrace(p.jobs[0]!.id));
    expect(log).toContain('one job, no config file');
    expect(await drivers.read('env-prepare')).not.toBe('');
    expect(await drivers.read('cleanup-done')).toContain('cleaned');
  });

  it('refuses --executor custom without a run_exec before taking a job (exit 2)', async () => {
    const run = await cli(['run-once', '--url', t.url, '--token', 'unused', '--executor', 'custom', '--custom-config-exec', '/bin/true']);
    expect(run.exitCode, run.all).toBe(2);
    expect(run.stderr).toContain('cannot run custom jobs: no run_exec (--custom-run-exec or CUSTOM_RUN_EXEC)');
  });
});
