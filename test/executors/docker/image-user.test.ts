/**
 * Images that run as a user of their own (`USER 1000:1000`, as many node and python images do): the
 * script runs as that user and can write the checkout, while the runner's own steps (fetch, cache,
 * artifacts) keep working on it, job after job, as with GitLab Runner.
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { docker, IMAGES, jobLabels, labelled, skipDocker } from './engine.js';
import { executorForOwner, runDockerJob, startDockerJob, useDockerTestServer, dockerProjectDir } from './jobs.js';
import { waitUntil } from '../../cli/helpers.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

describe.skipIf(skipDocker)('docker executor: images with a non-root USER', () => {
  it('runs the script as the image user, which can write the checkout; cache, artifacts and the next fetch still work', async () => {
    const yaml = (script: string) => `j:\n  image: ${IMAGES.user}\n  variables:\n    GIT_STRATEGY: fetch\n  cache:\n    key: k\n    paths: [deps/]\n  artifacts:\n    paths: [out/]\n  script:\n${script}  after_script:\n    - echo "after as $(id -u):$(id -g)" && touch after-was-here\n`;
    const first = await runDockerJob(t, token, yaml('    - echo "script as $(id -u):$(id -g)"\n    - mkdir -p deps out && echo dep > deps/d && echo built > out/o\n    - echo changed >> README.md\n'));
    expect(first.status, first.trace).toBe('success');
    expect(first.trace).toContain('Running the script as 1000:1000 (the image\'s USER "1000:1000")');
    expect(first.trace).toContain('script as 1000:1000');
    expect(first.trace).toContain('after as 1000:1000');
    expect(first.trace).toMatch(/Created cache "k": 1 file/);
    expect(first.trace).toContain('Uploading artifacts...');
    // The checkout is the runner's again between jobs (git refuses a repository of another owner).
    const project = dockerProjectDir(first.dirs.builds, token);
    for (const path of ['.', 'out/o', 'after-was-here', 'README.md']) expect((await stat(join(project, path))).uid, path).toBe(process.getuid?.() ?? 0);

    const next = await runDockerJob(t, token, yaml('    - test ! -e out && test ! -e after-was-here\n    - cat deps/d\n    - echo again > README.md && echo "second ok"\n'), { dirs: first.dirs });
    expect(next.status, next.trace).toBe('success');
    expect(next.trace).toContain('Restored cache "k"');
    expect(next.trace).toContain('second ok');
  }, 120_000);

  it('runs the build stages as [runners.docker] user instead of the image USER', async () => {
    const yaml = (image: string) => `j:\n  image: ${image}\n  script:\n    - echo "as $(id -u):$(id -g)" && touch written\n`;
    const asUser = await runDockerJob(t, token, yaml(IMAGES.sh), { docker: { user: '2000:3000' } });
    expect(asUser.status, asUser.trace).toBe('success');
    expect(asUser.trace).toContain('as 2000:3000');
    const asRoot = await runDockerJob(t, token, yaml(IMAGES.user), { docker: { user: 'root' } });
    expect(asRoot.status, asRoot.trace).toBe('success');
    expect(asRoot.trace).toContain('as 0:0');
  }, 120_000);

  it('hands the checkout of a job stopped mid-script back to a runner that is not root', async () => {
    // The runner here is root; it stands in for one whose uid is 4321.
    const owner = { uid: 4321, gid: 4321 };
    const services = await executorForOwner(owner);
    const started = await startDockerJob(t, token, `j:\n  image: ${IMAGES.user}\n  script:\n    - mkdir -p late && touch late/file && echo "wrote as $(id -u)"\n    - sleep 300\n`, { services, runner: { kill_grace_period: 1 } });
    await waitUntil(async () => (await t.server.getTrace(started.id)).toString('utf8').includes('\nwrote as 1000'), 60_000, 'the script wrote late/file');
    t.server.cancelJob(started.id);
    const job = { ...started, ...(await started.done) };
    expect(job.status, job.trace).toBe('canceled');
    const project = dockerProjectDir(job.dirs.builds, token);
    for (const path of ['.', 'late', 'late/file', 'README.md']) expect((await stat(join(project, path))).uid, path).toBe(owner.uid);
    expect(await labelled(...jobLabels(token, job.id))).toEqual({ containers: [], networks: [] });
  }, 120_000);

  it('gives the hand-over container, which runs the image\'s own /bin/sh as root, the checkout and the stage\'s files, never the state dir', async () => {
    // An image whose /bin/sh, when root, notes every directory mounted under /builds in the checkout.
    const image = await imageWithRootSh(`for m in $(/bin/busybox awk '{print $5}' /proc/self/mountinfo); do case "$m" in /builds/*) [ -d "$m" ] && echo "$m" >> /builds/group/project/.root-sh-saw ;; esac; done`);
    const lines = ['echo "file variable: $(cat "$SECRET_FILE") as $(id -u)"', `echo "beside it: $(ls -A "$(dirname "$SECRET_FILE")" | tr '\\n' ' ')"`];
    const yaml = `j:\n  image: ${image}\n  script:\n${lines.map((line) => `    - ${JSON.stringify(line)}\n`).join('')}`;
    const job = await runDockerJob(t, token, yaml, { variables: { SECRET_FILE: 'the secret' }, variableFlags: { SECRET_FILE: { file: true, masked: false } } });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('file variable: the secret as 1000');
    // The stage sees its script and file variables; the trace spool and its delivery record stay out.
    expect(job.trace).toMatch(/beside it: [^\n]*SECRET_FILE/);
    expect(job.trace).not.toMatch(/beside it: [^\n]*trace/);
    const project = dockerProjectDir(job.dirs.builds, token);
    const saw = (await readFile(join(project, '.root-sh-saw'), 'utf8')).split('\n').filter(Boolean);
    expect(saw.length).toBeGreaterThan(0);
    expect(new Set(saw)).toEqual(new Set(['/builds/group/project']));
  }, 120_000);
});

const run = promisify(execFile);

/** ci-runner-test/user:1 with a /bin/sh that runs `rootLine` when started as root; removed after the test. */
async function imageWithRootSh(rootLine: string): Promise<string> {
  const name = `ci-runner-test/root-sh-${process.pid}-${Date.now()}:1`;
  const container = `ci-runner-root-sh-${process.pid}-${Date.now()}`;
  const sh = `#!/bin/busybox sh\nif [ "$(/bin/busybox id -u)" = 0 ]; then ${rootLine}; fi\nexec /bin/busybox sh "$@"\n`;
  // Through stdin and the image's CMD, so the committed image keeps no entrypoint or environment of ours.
  const child = run('docker', ['run', '-i', '--name', container, '--user', '0', IMAGES.user, '/bin/busybox', 'sh', '-c', 'rm /bin/sh && cat > /bin/sh && chmod 755 /bin/sh']);
  child.child.stdin?.end(sh);
  await child;
  await docker(['commit', '--change', 'USER 1000:1000', '--change', 'CMD ["sh"]', container, name]);
  await docker(['rm', container]);
  onTestFinished(async () => void (await docker(['rmi', name]).catch(() => undefined)));
  return name;
}
