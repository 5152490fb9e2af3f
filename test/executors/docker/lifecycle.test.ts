/**
 * A docker job's life around its script: secrets that never show outside the container's script, a
 * large output that arrives intact, cancel and timeout that leave no container or network behind, and
 * files a container writes into the checkout handed back to the runner's user.
 */
import { execFile } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { docker, jobLabels, labelled, skipDocker } from './engine.js';
import { executorForOwner, runDockerJob, startDockerJob, useDockerTestServer, dockerProjectDir } from './jobs.js';

const execFileP = promisify(execFile);

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

async function waitForBuildContainer(id: number): Promise<string> {
  let name = '';
  await waitUntil(async () => {
    const names = (await docker(['ps', ...jobLabels(token, id).flatMap((l) => ['--filter', `label=${l}`]), '--format', '{{.Names}}'])).split('\n');
    name = names.find((n) => n.endsWith('-build-script')) ?? '';
    return name !== '';
  }, 60_000, 'the build container to run');
  return name;
}

describe.skipIf(skipDocker)('docker executor: secrets, output, stopping, file ownership', () => {
  it('keeps secret variables out of ps, docker inspect and the trace, in a 0600 script removed afterwards', async () => {
    const secret = `sekret-${Math.random().toString(36).slice(2)}`;
    const job = await startDockerJob(t, token, 'j:\n  script:\n    - echo "secret length ${#MY_SECRET}"\n    - echo "$MY_SECRET"\n    - sleep 4\n', { variables: { MY_SECRET: secret } });
    const container = await waitForBuildContainer(job.id);
    const inspect = await docker(['inspect', container]);
    const ps = (await execFileP('ps', ['-eo', 'args'], { maxBuffer: 16 * 1024 * 1024 })).stdout;
    const stateDir = join(`${dockerProjectDir(job.dirs.builds, token)}.tmp`, `build-${job.id}`);
    const scripts = (await readdir(stateDir)).filter((f) => f.endsWith('.sh'));
    const modes = await Promise.all(scripts.map(async (f) => (await stat(join(stateDir, f))).mode & 0o777));
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(trace).toContain(`secret length ${secret.length}`);
    expect(trace).not.toContain(secret);
    expect(inspect).not.toContain(secret);
    expect(ps).not.toContain(secret);
    expect(modes.length).toBeGreaterThan(0);
    expect(modes.every((m) => m === 0o600)).toBe(true);
    const left = await readdir(stateDir).catch(() => []);
    expect(left.filter((f) => f.endsWith('.sh'))).toEqual([]);
  });

  it('delivers 100 MB printed in the container byte-exact', async () => {
    // 1.1 MB of numbered lines, printed 100 times: large writes, as real build tools make. Over v1:
    // a v4 server fails a job whose log passes 100 MiB (GitLab's ci_jobs_trace_size_limit).
    const { status, trace } = await runDockerJob(t, token, 'j:\n  script:\n    - seq 1 170000 > /tmp/part\n    - for i in $(seq 100); do cat /tmp/part; done\n', { runner: { output_limit: 200_000, api: 'v1' } });
    expect(status).toBe('success');
    const part = `${Array.from({ length: 170_000 }, (_, i) => i + 1).join('\n')}\n`;
    const expected = part.repeat(100);
    expect(expected.length).toBeGreaterThan(100 * 1024 * 1024);
    expect(trace.includes(expected)).toBe(true);
  }, 180_000);

  it('stops a canceled job and removes its containers and network', async () => {
    const job = await startDockerJob(t, token, 'j:\n  services:\n    - ci-runner-test/httpd:1\n  script:\n    - echo started\n    - sleep 300\n', { runner: { kill_grace_period: 1 } });
    await waitForBuildContainer(job.id);
    expect((await labelled(...jobLabels(token, job.id))).networks).toHaveLength(1);
    t.server.cancelJob(job.id);
    const { status, trace } = await job.done;
    expect(status).toBe('canceled');
    expect(trace).toContain('started');
    expect(await labelled(...jobLabels(token, job.id))).toEqual({ containers: [], networks: [] });
  }, 60_000);

  it('stops a job canceled while it waits for its services, reporting the cancel', async () => {
    const job = await startDockerJob(t, token, 'j:\n  services:\n    - ci-runner-test/nolisten:1\n  script:\n    - echo never\n', { docker: { wait_for_services_timeout: 120 } });
    await waitUntil(async () => (await t.server.getTrace(job.id)).toString('utf8').includes('Waiting for services'), 60_000, 'the wait for services');
    t.server.cancelJob(job.id);
    const { status, trace, result } = await job.done;
    expect(status).toBe('canceled');
    expect(result.kind === 'job' ? result.outcome.reason : undefined).toBe('canceled');
    expect(trace).not.toContain('$ echo never');
    expect(await labelled(...jobLabels(token, job.id))).toEqual({ containers: [], networks: [] });
  }, 60_000);

  it('fails a job past its timeout, saying so, and removes its containers', async () => {
    const job = await startDockerJob(t, token, 'j:\n  timeout: 3s\n  script:\n    - echo started\n    - sleep 300\n', { runner: { kill_grace_period: 1 } });
    const { status, trace } = await job.done;
    expect(status).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: execution took longer than 3 seconds');
    expect(trace).not.toContain('SIGKILL');
    expect(await labelled(...jobLabels(token, job.id))).toEqual({ containers: [], networks: [] });
  }, 60_000);

  it('says in the job log when the build container outlived SIGTERM and was killed after the grace period', async () => {
    // Stopped once the script is known to ignore SIGTERM (a fixed timeout could fire before it starts on a loaded machine).
    const job = await startDockerJob(t, token, 'j:\n  script:\n    - trap "" TERM; echo ignoring-term; sleep 300\n', { runner: { kill_grace_period: 1 } });
    await waitUntil(async () => (await t.server.getTrace(job.id)).toString('utf8').includes('\nignoring-term'), 60_000, 'the script started');
    t.server.cancelJob(job.id);
    const { status, trace } = await job.done;
    expect(status).toBe('canceled');
    expect(trace).toContain('WARNING: build_script did not stop within 1 s of SIGTERM; it was killed (SIGKILL)');
  }, 90_000);

  it('hands files a container wrote into the checkout back to the runner user, so the next job can fetch and clean', async () => {
    // The runner here is root; it stands in for one whose uid is 4321.
    const owner = { uid: 4321, gid: 4321 };
    const services = await executorForOwner(owner);
    const first = await runDockerJob(t, token, 'j:\n  script:\n    - mkdir -p made/deep && echo x > made/deep/file && chmod 500 made/deep\n', { services });
    expect(first.status, first.trace).toBe('success');
    const project = dockerProjectDir(first.dirs.builds, token);
    for (const path of ['made', 'made/deep', 'made/deep/file', 'README.md']) expect((await stat(join(project, path))).uid, path).toBe(owner.uid);

    // A stage stopped before its wrapper could hand the files back: cleanup does it.
    const stopping = await startDockerJob(t, token, 'j:\n  variables:\n    GIT_STRATEGY: fetch\n  script:\n    - mkdir -p late && touch late/file && echo made-late\n    - sleep 300\n', { services, dirs: first.dirs, runner: { kill_grace_period: 1 } });
    await waitUntil(async () => (await t.server.getTrace(stopping.id)).toString('utf8').includes('\nmade-late'), 60_000, 'the script wrote late/file');
    t.server.cancelJob(stopping.id);
    const stopped = await stopping.done;
    expect(stopped.status, stopped.trace).toBe('canceled');
    expect((await stat(join(project, 'late/file'))).uid).toBe(owner.uid);

    const next = await runDockerJob(t, token, 'j:\n  variables:\n    GIT_STRATEGY: fetch\n  script:\n    - test ! -e made\n    - echo clean checkout\n', { services, dirs: first.dirs });
    expect(next.status, next.trace).toBe('success');
    expect(next.trace).toContain('clean checkout');
  }, 120_000);
});
