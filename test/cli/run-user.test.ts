/**
 * Global `user` / `run --user`: shell jobs run as that user while the daemon stays root. Needs root
 * (to create a system user and switch to it); skipped with the reason otherwise.
 */
import { logText } from '../helpers/log-text.js';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTestUser, isRoot, testGroupId, TEST_USER as USER } from '../helpers/job-user.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli, NODE_CLI } from './cli.js';
import { workDirs } from './helpers.js';

if (!isRoot) console.log('skipping run --user tests: they need root (useradd, switching users)');

let t: TestServer;
let uid = 0;
let extraGid = 0;
beforeAll(async () => {
  if (!isRoot) return;
  uid = (await ensureTestUser()).uid;
  extraGid = await testGroupId();
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

async function setup(global: string): Promise<{ config: string; root: string }> {
  const d = await workDirs();
  await chmod(d.root, 0o755); // mkdtemp makes it 0700: the job user must be able to reach builds_dir
  const { token } = await t.registerRunner();
  const config = join(d.root, 'config.toml');
  await writeFile(config, `check_interval = 1\nlog_format = "json"\n${global}\n[[runners]]\n  name = "as-user"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n  cache_dir = "${d.cache}"\n`);
  return { config, root: d.root };
}

describe.skipIf(!isRoot)('run with a job user', () => {
  it('runs shell jobs as the configured user, with its HOME/USER, on files it can change', { timeout: 120_000 }, async () => {
    const { config } = await setup(`user = "${USER}"`);
    const p = await t.pipeline(
      [
        'make:',
        '  stage: build',
        '  script:',
        '    - echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"',
        '    - echo "home=$HOME user=$USER logname=$LOGNAME"',
        '    - echo built > out.txt',
        '  artifacts:',
        '    paths: [out.txt]',
        'use:',
        '  stage: test',
        '  script:',
        '    - echo more >> out.txt && cat out.txt',
        '    - touch README.md && rm -f README.md && echo project-writable',
      ].join('\n'),
    );
    const daemon = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    try {
      for (const job of p.jobs) await t.waitForJob(job.id, (j) => j.status === 'success' || j.status === 'failed', 90_000);
      const [make, use] = await Promise.all(p.jobs.map(async (j) => logText(await t.server.getTrace(j.id))));
      expect(t.server.getJob(p.jobs[0]!.id)?.status, make).toBe('success');
      expect(make).toContain(`uid=${uid} `);
      expect(make).toMatch(new RegExp(`groups=.*\\b${extraGid}\\b`));
      expect(make).toContain(`home=/nonexistent-${USER} user=${USER} logname=${USER}`);
      expect(t.server.getJob(p.jobs[1]!.id)?.status, use).toBe('success');
      expect(use).toContain('built\nmore');
      expect(use).toContain('project-writable');
    } finally {
      daemon.kill('SIGTERM');
      await daemon;
    }
  });

  it('refuses to start with an unknown user: exit 2 and a clear message', async () => {
    const { config } = await setup('');
    const result = await cli(['run', '-c', config, '--user', 'no-such-user-ci-runner']);
    expect(result.exitCode).toBe(2);
    expect(result.all).toContain('user "no-such-user-ci-runner"');
  });
});
