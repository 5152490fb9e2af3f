import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli, NODE_CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

/** Starts `ci-runner ...args` on a config logging only errors; resolves once it logged `ci-runner started`. */
async function daemonLogsStart(args: string[], env: Record<string, string> = {}): Promise<string> {
  const { root, builds, cache } = await workDirs();
  const { token } = await t.registerRunner();
  const config = join(root, 'config.toml');
  await writeFile(config, `log_level = "error"\n[[runners]]\n  name = "quiet"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${builds}"\n  cache_dir = "${cache}"\n`);
  const child = execa('node', [...NODE_CLI, ...args.map((a) => (a === 'CONFIG' ? config : a))], { reject: false, all: true, stdin: 'ignore', env });
  let output = '';
  child.all?.on('data', (c: Buffer) => (output += c.toString()));
  try {
    await waitUntil(() => output.includes('ci-runner started') || child.exitCode !== null, 30_000, 'the start line');
  } finally {
    child.kill('SIGTERM');
    await child;
  }
  return output;
}

describe('the command line a GitLab Runner user types', () => {
  it('takes --debug and --log-level before the command, and they win over log_level in config.toml', async () => {
    expect(await daemonLogsStart(['--debug', 'run', '-c', 'CONFIG'])).toContain('ci-runner started');
    expect(await daemonLogsStart(['-l', 'info', 'run', '-c', 'CONFIG'])).toContain('ci-runner started');
    expect(await daemonLogsStart(['run', '-c', 'CONFIG', '--log-level', 'debug'])).toContain('ci-runner started');
    expect(await daemonLogsStart(['run', '-c', 'CONFIG'], { LOG_LEVEL: 'info' })).toContain('ci-runner started');
    expect(await daemonLogsStart(['run', '-c', 'CONFIG'], { RUNNER_DEBUG: 'true' })).toContain('ci-runner started');
  });

  it("starts from GitLab Runner's own service command line (run --working-directory D --config C --service gitlab-runner --syslog) and runs jobs", async () => {
    const { root, builds } = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(root, 'config.toml');
    await writeFile(config, `log_format = "json"\ncheck_interval = 1\n[[runners]]\n  name = "from-unit"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${builds}"\n`);
    const child = execa('node', [...NODE_CLI, 'run', '--working-directory', root, '--config', config, '--service', 'gitlab-runner', '--syslog'], { reject: false, all: true, stdin: 'ignore' });
    let output = '';
    child.all?.on('data', (c: Buffer) => (output += c.toString()));
    try {
      const p = await t.pipeline('from-unit:\n  script:\n    - echo "in $PWD"\n');
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 60_000);
    } finally {
      child.kill('SIGTERM');
    }
    const result = await child;
    expect(result.exitCode, output).toBe(0);
    expect(output).toMatch(/"service":"gitlab-runner"/);
    // Not under the journal here: the log stays on standard error, and it says so once.
    expect(output.match(/--syslog: ci-runner does not write to syslog/g)).toHaveLength(1);
  });

  it('suggests the nearest command for a typo (exit 2)', async () => {
    const typo = await cli(['regster', '-n']);
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toContain('unknown command "regster"; did you mean `ci-runner register`?');
    const legacy = await cli(['run-singel']);
    expect(legacy.exitCode).toBe(2);
    expect(legacy.stderr).toContain('did you mean `ci-runner run-single`?');
  });

  it('says what replaces a GitLab Runner command it does not have (exit 2)', async () => {
    for (const name of ['artifacts-downloader', 'cache-archiver']) {
      const result = await cli([name, '--url', t.url]);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(`\`${name}\` is a command of GitLab Runner's helper image`);
    }
    const steps = await cli(['steps']);
    expect(steps.exitCode).toBe(2);
    expect(steps.stderr).toContain('runs CI steps, which ci-runner does not support');
  });

  it('suggests the nearest flag for a mistyped one (exit 2)', async () => {
    const result = await cli(['run-single', '--url', t.url, '--max-build', '2']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('Unknown argument: --max-build (did you mean --max-builds?)');
  });

  it('answers `help <command>` with the command\'s help, as GitLab Runner does', async () => {
    const result = await cli(['help', 'register']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('--non-interactive');
  });

  it('keeps the last value of a flag given twice, as GitLab Runner does, with or without yargs', async () => {
    const d = await workDirs();
    const first = join(d.root, 'first.toml');
    const last = join(d.root, 'last.toml');
    // `list` is read by yargs; `run` written plainly by the daemon's own reader, here with a repeat.
    for (const args of [['list', '-c', first, '--config', last], ['run', '-c', first, '--config', last, '-l', 'info', '--log-level', 'warn']]) {
      const result = await cli(args);
      expect(result.exitCode, result.all).toBe(2);
      expect(result.all).toContain(`${last}: no such config file`);
      expect(result.all).not.toContain('must be of type string');
    }
  });
});
