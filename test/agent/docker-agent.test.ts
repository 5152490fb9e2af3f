/**
 * The daemon with docker entries, through the built CLI: a pipeline whose artifacts go from a docker
 * job to a shell job and back, and a daemon SIGKILLed mid-job whose restart removes the job's
 * containers and reports the job.
 */
import { logText } from '../helpers/log-text.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { CLI, NODE_CLI } from '../cli/cli.js';
import { waitUntil, workDirs } from '../cli/helpers.js';
import { IMAGES, jobLabels, labelled, skipDocker } from '../executors/docker/engine.js';

let t: TestServer;
beforeAll(async () => {
  if (skipDocker) return;
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
});
afterAll(async () => {
  await t?.close();
});

function dockerEntry(name: string, url: string, token: string, builds: string): string {
  return `[[runners]]\n  name = "${name}"\n  url = "${url}"\n  token = "${token}"\n  executor = "docker"\n  builds_dir = "${builds}"\n  kill_grace_period = 1\n  [runners.docker]\n    image = "${IMAGES.sh}"\n    pull_policy = ["if-not-present"]\n`;
}

function startDaemon(config: string) {
  const child = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
  let output = '';
  child.all?.on('data', (c: Buffer) => (output += c.toString()));
  return { child, output: () => output };
}

describe.skipIf(skipDocker)('daemon with docker entries', () => {
  it('runs a pipeline whose artifacts go from a docker job to a shell job and back', async () => {
    const d = await workDirs();
    const dockerRunner = await t.registerRunner({ tags: ['docker'] });
    const shellRunner = await t.registerRunner({ tags: ['shell'] });
    const config = join(d.root, 'config.toml');
    await writeFile(
      config,
      `concurrent = 2\ncheck_interval = 1\nlog_format = "json"\n\n${dockerEntry('docker', t.url, dockerRunner.token, d.builds)}\n[[runners]]\n  name = "shell"\n  url = "${t.url}"\n  token = "${shellRunner.token}"\n  builds_dir = "${d.builds}"\n`,
    );
    const yaml = [
      'stages: [one, two, three]',
      'made-in-docker:',
      '  stage: one',
      '  tags: [docker]',
      '  script:',
      '    - mkdir -p out && echo "from $(cat /etc/hostname | wc -c)-char container" > out/a.txt && test ! -e /usr/bin/git && echo "no git in the image"',
      '  artifacts:',
      '    paths: [out/]',
      'read-on-shell:',
      '  stage: two',
      '  tags: [shell]',
      '  script:',
      '    - cat out/a.txt',
      '    - echo "shell adds" > out/b.txt',
      '  artifacts:',
      '    paths: [out/]',
      'read-in-docker:',
      '  stage: three',
      '  tags: [docker]',
      '  script:',
      '    - cat out/a.txt out/b.txt',
      '',
    ].join('\n');
    const p = await t.pipeline(yaml);
    const daemon = startDaemon(config);
    try {
      for (const job of p.jobs) await t.waitForJob(job.id, (j) => j.status === 'success' || j.status === 'failed', 90_000);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.child;
    }
    const traces = await Promise.all(p.jobs.map(async (j) => logText(await t.server.getTrace(j.id))));
    for (const [i, job] of p.jobs.entries()) expect(t.server.getJob(job.id)?.status, traces[i]).toBe('success');
    expect(traces[0]).toContain('no git in the image');
    expect(traces[1]).toMatch(/from \d+-char container/);
    expect(traces[2]).toMatch(/from \d+-char container\nshell adds/);
  }, 120_000);

  it('removes what a SIGKILLed daemon left in docker when it starts again, and reports the job', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `concurrent = 1\ncheck_interval = 1\nlog_format = "json"\n\n${dockerEntry('crash', t.url, token, d.builds)}`);
    const p = await t.pipeline(`j:\n  services:\n    - ${IMAGES.httpd}\n  script:\n    - echo started\n    - sleep 300\n`);
    const id = p.jobs[0]!.id;
    const first = startDaemon(config);
    await waitUntil(async () => logText(await t.server.getTrace(id)).includes('started'), 60_000, 'the job to start');
    first.child.kill('SIGKILL');
    await first.child;
    const left = await labelled(...jobLabels(token, id));
    expect(left.containers.length).toBeGreaterThan(0);
    expect(left.networks).toHaveLength(1);

    const second = startDaemon(config);
    try {
      await t.waitForJob(id, (j) => j.status === 'failed', 60_000);
      await waitUntil(async () => {
        const now = await labelled(...jobLabels(token, id));
        return now.containers.length === 0 && now.networks.length === 0;
      }, 30_000, 'the leftovers to be removed');
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
    expect(second.output()).toContain('removed containers, networks and volumes left by an earlier run');
  }, 120_000);
});
