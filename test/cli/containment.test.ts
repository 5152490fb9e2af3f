/**
 * End to end: a job child that calls setsid and clears its environment (so neither the process-group
 * kill nor the marker sweep can find it) is gone after the job ends, after a cancel, and after the
 * daemon is SIGKILLed and started again — where the runner can give jobs a cgroup. The fallback's own
 * end-to-end tests are in run.test.ts and run-once.test.ts.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { processContainment } from '../../src/executors/cgroup/containment.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { cli, NODE_CLI } from './cli.js';
import { allGone, pidsIn, waitUntil, workDirs } from './helpers.js';

const containment = await processContainment();
const skipReason = containment.kind === 'process-group' ? containment.reason : undefined;
if (skipReason) console.log(`skipping the cgroup end-to-end tests: ${skipReason}`);

let t: TestServer;
let token: string;
useTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const trace = async (id: number): Promise<string> => (await t.server.getTrace(id)).toString('utf8');
/** A job line leaving a process in its own session with an empty environment; its pid goes to `pidFile`. */
const escapee = (pidFile: string): string => `setsid env -i sh -c 'echo $$ >> ${pidFile}; exec sleep 300' > /dev/null 2>&1 < /dev/null &`;

function runOnce(d: { builds: string; cache: string }, env: Record<string, string> = {}) {
  return cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', '--log-level', 'info'], { env });
}

describe('containment named in the logs', () => {
  it('says in the job log and the daemon log when jobs run without a cgroup, and why', async () => {
    const d = await workDirs();
    const p = await t.pipeline('plain:\n  script:\n    - echo hi\n');
    const result = await runOnce(d, { CI_RUNNER_CGROUPS: 'off' });
    expect(result.exitCode, result.all).toBe(0);
    const line = 'process group + marker sweep (cgroups not available: turned off by CI_RUNNER_CGROUPS=off)';
    expect(await trace(p.jobs[0]!.id)).toContain(`Process containment: ${line}`);
    expect(result.all).toContain(`process containment: ${line}`);
  });
});

describe.skipIf(skipReason !== undefined)('a job in its own cgroup (end to end)', () => {
  it('leaves no setsid child with an empty environment behind when the job ends', async () => {
    const d = await workDirs();
    const pidFile = join(d.root, 'pids');
    const p = await t.pipeline(`ends:\n  script:\n    - ${escapee(pidFile)}\n    - while [ ! -s ${pidFile} ]; do sleep 0.05; done\n`);
    const result = await runOnce(d);
    expect(result.exitCode, result.all).toBe(0);
    const pids = await pidsIn(pidFile);
    expect(pids.length).toBe(1);
    await waitUntil(() => allGone(pids), 10_000, 'the setsid child gone');
    expect(await trace(p.jobs[0]!.id)).toMatch(/Process containment: cgroup v2 \/\S+\/ci-runner\/daemon-\d+-\d+\/job-[0-9a-f]+\n/);
    expect(result.all).toMatch(/process containment: cgroup v2 /);
  });

  it('leaves no setsid child with an empty environment behind when the job is cancelled', async () => {
    const d = await workDirs();
    const pidFile = join(d.root, 'pids');
    const p = await t.pipeline(`cancel-me:\n  script:\n    - ${escapee(pidFile)}\n    - echo started\n    - sleep 1100\n`);
    const jobId = p.jobs[0]!.id;
    const running = runOnce(d);
    await waitUntil(async () => (await pidsIn(pidFile)).length === 1 && (await trace(jobId)).includes('started'), 30_000, 'job started');
    const pids = await pidsIn(pidFile);
    t.server.cancelJob(jobId);
    const result = await running;
    expect(result.exitCode, result.all).toBe(1);
    await waitUntil(() => allGone(pids), 10_000, 'the setsid child gone');
  });

  it('kills a setsid child with an empty environment left by a SIGKILLed daemon when it starts again', async () => {
    const d = await workDirs();
    const { token: runnerToken } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const pidFile = join(d.root, 'pids');
    await writeFile(config, `concurrent = 1\ncheck_interval = 1\nlog_format = "json"\n\n[[runners]]\n  name = "crashy"\n  url = "${t.url}"\n  token = "${runnerToken}"\n  builds_dir = "${d.builds}"\n  executor = "shell"\n`);
    const p = await t.pipeline(`orphan:\n  script:\n    - ${escapee(pidFile)}\n    - echo started\n    - sleep 1100\n`);
    const jobId = p.jobs[0]!.id;
    const first = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, stdin: 'ignore' });
    await waitUntil(async () => (await pidsIn(pidFile)).length === 1 && (await trace(jobId)).includes('started'), 30_000, 'job started');
    first.kill('SIGKILL');
    await first;
    const pids = await pidsIn(pidFile);
    expect(await allGone(pids)).toBe(false);

    const second = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    try {
      await t.waitForJob(jobId, (j) => j.status === 'failed', 30_000);
      await waitUntil(() => allGone(pids), 10_000, 'the setsid child gone');
    } finally {
      second.kill('SIGTERM');
      await second;
    }
  });
});
