import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { NODE_CLI } from './cli.js';
import { allGone, pidsIn, waitUntil, workDirs } from './helpers.js';
import { shortToken } from '../../src/util/short-token.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface RunnerSpec {
  name: string;
  token: string;
  limit?: number;
}

async function writeConfig(path: string, builds: string, runners: RunnerSpec[], global = ''): Promise<void> {
  const blocks = runners.map((r) => `[[runners]]\n  name = "${r.name}"\n  url = "${t.url}"\n  token = "${r.token}"\n  builds_dir = "${builds}"\n  limit = ${r.limit ?? 0}\n  trace_keepalive_interval = 1\n`);
  await writeFile(path, `concurrent = 2\ncheck_interval = 1\nlog_format = "json"\nlog_level = "info"\n${global}\n${blocks.join('\n')}`);
}

function startDaemon(config: string) {
  const child = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
  let output = '';
  child.all?.on('data', (c: Buffer) => (output += c.toString()));
  return { child, output: () => output };
}

const trace = async (id: number) => (await t.server.getTrace(id)).toString('utf8');

describe('run (daemon)', () => {
  it('SIGQUIT: finishes a running job before exiting, and takes no new job', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    // A shutdown_timeout shorter than the job: a graceful stop is not bounded by it (GitLab Runner's SIGQUIT).
    await writeConfig(config, d.builds, [{ name: 'graceful', token }], 'shutdown_timeout = 1');
    const p = await t.pipeline('a:\n  stage: build\n  script:\n    - echo started\n    - sleep 3\n    - echo finished\nb:\n  stage: test\n  script:\n    - echo second\n');
    const [a, b] = p.jobs;
    const daemon = startDaemon(config);
    await waitUntil(async () => (await trace(a!.id)).includes('started'), 30_000, 'job a started');
    daemon.child.kill('SIGQUIT');
    await waitUntil(() => daemon.output().includes('Starting graceful shutdown'), 10_000, 'graceful shutdown logged');
    // A second SIGQUIT changes nothing.
    daemon.child.kill('SIGQUIT');
    const result = await daemon.child;
    expect(result.exitCode, daemon.output()).toBe(0);
    expect(t.server.getJob(a!.id)?.status).toBe('success');
    expect(await trace(a!.id)).toContain('finished');
    // GitLab Runner's header: the name, the 9-character short token and this host's system id (.runner_system_id).
    const systemId = (await readFile(join(d.root, '.runner_system_id'), 'utf8')).trim();
    expect(await trace(a!.id)).toContain(`  on graceful ${token.slice(0, 9)}, system ID: ${systemId}\n`);
    expect(t.server.getJob(b!.id)?.status).toBe('pending');
    t.server.cancelJob(b!.id);
  });

  it('SIGTERM: aborts running jobs at once, reports them failed (runner_interrupted, which the server records) and leaves no process', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const pidFile = join(d.root, 'pids');
    await writeConfig(config, d.builds, [{ name: 'forced', token }]);
    const p = await t.pipeline(`long:\n  script:\n    - sleep 1000 & echo $! >> ${pidFile}\n    - echo started\n    - sleep 1001\n`);
    const jobId = p.jobs[0]!.id;
    const daemon = startDaemon(config);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 30_000, 'job started');
    daemon.child.kill('SIGTERM');
    const result = await daemon.child;
    expect(result.exitCode, daemon.output()).toBe(0);
    expect(daemon.output()).toContain('Starting forceful shutdown');
    const job = t.server.getJob(jobId);
    expect(job?.status).toBe('failed');
    // The reference server lists runner_interrupted in features.failure_reasons, as GitLab 18 does, and records it.
    expect(job?.failure_reason).toBe('runner_interrupted');
    expect(await trace(jobId)).toContain('ERROR: Job failed: aborted: the runner was stopped (SIGTERM)');
    await waitUntil(async () => allGone(await pidsIn(pidFile)), 10_000, 'job processes gone');
  });

  it('SIGTERM after SIGQUIT turns the graceful stop forceful', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeConfig(config, d.builds, [{ name: 'then-forced', token }]);
    const p = await t.pipeline('long:\n  script:\n    - echo started\n    - sleep 1000\n');
    const jobId = p.jobs[0]!.id;
    const daemon = startDaemon(config);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 30_000, 'job started');
    daemon.child.kill('SIGQUIT');
    await waitUntil(() => daemon.output().includes('Starting graceful shutdown'), 10_000, 'graceful shutdown logged');
    expect(daemon.child.exitCode).toBeNull();
    daemon.child.kill('SIGINT');
    const result = await daemon.child;
    expect(result.exitCode, daemon.output()).toBe(0);
    expect(t.server.getJob(jobId)?.status).toBe('failed');
    expect(await trace(jobId)).toContain('aborted: the runner was stopped (SIGINT)');
  });

  it('SIGTERM: exits 1 when the aborted job cannot report within shutdown_timeout, and a restart delivers its final state', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeConfig(config, d.builds, [{ name: 'stuck-update', token }], 'shutdown_timeout = 2');
    const p = await t.pipeline('long:\n  script:\n    - echo started\n    - sleep 1000\n');
    const jobId = p.jobs[0]!.id;
    const daemon = startDaemon(config);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 30_000, 'job started');
    const fault = t.server.faults.add({ endpoint: 'update_build', action: 'hang' });
    daemon.child.kill('SIGTERM');
    const result = await daemon.child;
    expect(result.exitCode, daemon.output()).toBe(1);
    expect(daemon.output()).toContain('shutdown timed out after 2 s');
    expect(t.server.getJob(jobId)?.status).toBe('running');
    t.server.faults.remove(fault);
    const again = startDaemon(config);
    try {
      await t.waitForJob(jobId, (j) => j.status === 'failed', 60_000);
    } finally {
      again.child.kill('SIGTERM');
      await again.child;
    }
  });

  it('a second SIGTERM during the forceful stop exits 1 at once', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeConfig(config, d.builds, [{ name: 'twice', token }], 'shutdown_timeout = 600');
    const p = await t.pipeline('long:\n  script:\n    - echo started\n    - sleep 1000\n');
    const jobId = p.jobs[0]!.id;
    const daemon = startDaemon(config);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 30_000, 'job started');
    const fault = t.server.faults.add({ endpoint: 'update_build', action: 'hang' });
    try {
      daemon.child.kill('SIGTERM');
      await waitUntil(() => daemon.output().includes('Starting forceful shutdown'), 10_000, 'forceful shutdown logged');
      daemon.child.kill('SIGTERM');
      const result = await daemon.child;
      expect(result.exitCode, daemon.output()).toBe(1);
      expect(daemon.output()).toContain('forced exit with stop signal SIGTERM');
    } finally {
      t.server.faults.remove(fault);
      t.server.cancelJob(jobId);
    }
  });

  it('respects concurrent and per-runner limit across two runners', async () => {
    const d = await workDirs();
    const one = await t.registerRunner();
    const two = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const log = join(d.root, 'events.log');
    await writeConfig(config, d.builds, [{ name: 'limited', token: one.token, limit: 1 }, { name: 'free', token: two.token }]);
    const job = (n: number) => `j${n}:\n  script:\n    - echo "start $CI_RUNNER_SHORT_TOKEN" >> ${log}\n    - sleep 1\n    - echo "end $CI_RUNNER_SHORT_TOKEN" >> ${log}\n`;
    const p = await t.pipeline([1, 2, 3, 4, 5].map(job).join(''));
    const daemon = startDaemon(config);
    try {
      for (const j of p.jobs) await t.waitForJob(j.id, (v) => v.status === 'success', 60_000);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.child;
    }
    const events = (await readFile(log, 'utf8')).trim().split('\n');
    let running = 0;
    let max = 0;
    const perRunner = new Map<string, number>();
    for (const e of events) {
      const [kind, who = ''] = e.split(' ');
      const delta = kind === 'start' ? 1 : -1;
      running += delta;
      perRunner.set(who, (perRunner.get(who) ?? 0) + delta);
      max = Math.max(max, running);
      expect(perRunner.get(shortToken(one.token)) ?? 0).toBeLessThanOrEqual(1);
    }
    expect(max).toBeLessThanOrEqual(2);
    expect(events).toHaveLength(10);
  });

  it('logs a refused token (403) clearly, keeps running, and picks up a fixed token on SIGHUP', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeConfig(config, d.builds, [{ name: 'revoked', token: 'revoked-token-123' }]);
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('was it deleted or its token revoked?'), 30_000, '403 logged');
      const { token } = await t.registerRunner();
      await writeConfig(config, d.builds, [{ name: 'fixed', token }]);
      const p = await t.pipeline('after-reload:\n  script:\n    - echo reloaded\n');
      daemon.child.kill('SIGHUP');
      await t.waitForJob(p.jobs[0]!.id, (v) => v.status === 'success', 30_000);
      expect(daemon.output()).toContain('configuration reloaded');
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.child;
    }
  });

  it('keeps running when its only runner is docker and no engine answers, takes no job, and stops on SIGTERM', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `log_format = "json"\n[[runners]]\n  name = "no-engine"\n  url = "${t.url}"\n  token = "${token}"\n  executor = "docker"\n  builds_dir = "${d.builds}"\n  [runners.docker]\n    image = "alpine"\n    cli = "${join(d.root, 'no-such-docker')}"\n`);
    const p = await t.pipeline('j:\n  script:\n    - echo never\n');
    const daemon = startDaemon(config);
    await waitUntil(() => daemon.output().includes('takes no jobs'), 30_000, 'refusal logged');
    expect(daemon.output()).toContain('no-such-docker\\" was not found');
    // A daemon that exited here would be restarted by systemd in a loop.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(daemon.child.exitCode, daemon.output()).toBeNull();
    expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('pending');
    daemon.child.kill('SIGTERM');
    const result = await daemon.child;
    expect(result.exitCode, daemon.output()).toBe(0);
    t.server.cancelJob(p.jobs[0]!.id);
  });

  it('keeps running with no runners, warning, and starts polling for one added on SIGHUP', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, 'log_format = "json"\n');
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('no [[runners]] in the config'), 30_000, 'warning logged');
      // Still there after the warning; the job it runs after SIGHUP below shows it kept running.
      expect(daemon.child.exitCode, daemon.output()).toBeNull();
      const { token } = await t.registerRunner();
      await writeConfig(config, d.builds, [{ name: 'added', token }]);
      const p = await t.pipeline('added:\n  script:\n    - echo added\n');
      daemon.child.kill('SIGHUP');
      await t.waitForJob(p.jobs[0]!.id, (v) => v.status === 'success', 30_000);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.child).exitCode, daemon.output()).toBe(0);
  });

  it('runs a job that an in-flight (long-polled) request returns after SIGQUIT', async () => {
    const lp = await startTestServer({ longPollMs: 60_000 });
    try {
      const d = await workDirs();
      const { token } = await lp.registerRunner();
      const config = join(d.root, 'config.toml');
      // Over v1, whose long poll holds a runner's first request too; v4's (Workhorse's) answers a
      // request without last_update at once, so the first one held comes a check_interval later.
      await writeFile(config, `concurrent = 1\nlog_format = "json"\n[[runners]]\n  name = "lp"\n  url = "${lp.url}"\n  api = "v1"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n`);
      const daemon = startDaemon(config);
      await waitUntil(() => daemon.output().includes('polling for jobs'), 30_000, 'daemon started');
      daemon.child.kill('SIGQUIT');
      await waitUntil(() => daemon.output().includes('Starting graceful shutdown'), 10_000, 'signal handled');
      const p = await lp.pipeline('late:\n  script:\n    - echo "ran after the signal"\n');
      const result = await daemon.child;
      expect(result.exitCode, daemon.output()).toBe(0);
      expect(lp.server.getJob(p.jobs[0]!.id)?.status).toBe('success');
    } finally {
      await lp.close();
    }
  });
});

describe('run after a crash', () => {
  it('kills the orphaned job and reports it failed when the daemon starts again', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const pidFile = join(d.root, 'pids');
    await writeConfig(config, d.builds, [{ name: 'crashy', token }]);
    const p = await t.pipeline(`orphan:\n  script:\n    - echo $$ >> ${pidFile}\n    - echo started\n    - sleep 1000\n`);
    const jobId = p.jobs[0]!.id;
    const first = startDaemon(config);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 30_000, 'job started');
    first.child.kill('SIGKILL');
    await first.child;
    const pids = await pidsIn(pidFile);
    expect(pids.length).toBe(1);
    expect(t.server.getJob(jobId)?.status).toBe('running');

    const second = startDaemon(config);
    try {
      await t.waitForJob(jobId, (j) => j.status === 'failed', 30_000);
      await waitUntil(() => allGone(pids), 10_000, 'orphaned job processes gone');
      expect(await trace(jobId)).toContain('started');
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
  });

  it('ends the recovered job\'s trace saying the runner was killed and when the job was recovered', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeConfig(config, d.builds, [{ name: 'crashy', token }]);
    const p = await t.pipeline('lost:\n  script:\n    - echo started\n    - printf \'half a %s\' line; sleep 1000\n');
    const jobId = p.jobs[0]!.id;
    const first = startDaemon(config);
    // The masker may hold back the last character or two (they could begin a secret): those die with the daemon.
    await waitUntil(async () => (await trace(jobId)).includes('half a li'), 30_000, 'job printed its last output');
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    await first.child;

    const second = startDaemon(config);
    try {
      await t.waitForJob(jobId, (j) => j.status === 'failed', 60_000).catch((error: unknown) => {
        // What the restarted daemon said is what tells why recovery did not report the job.
        throw new Error(`${(error as Error).message}\nrestarted daemon said:\n${second.output()}`);
      });
      const text = await trace(jobId);
      // The job's output, then (on a line of its own) why it stopped and when it was recovered, last. The
      // count of killed processes may be absent: the start-up sweep of dead daemons' cgroups can empty
      // the job's cgroup before recovery looks.
      const match = /half a li(?:ne?)?\n\u001b\[0;33mWARNING: The runner stopped \(killed or crashed\) while this job was running; its last output above was written at (\S+)\.\u001b\[0;m\n\u001b\[31;1mERROR: Job failed \(system failure\): the runner recovered the job at (\S+) when it started again(?:, killed \d+ process(?:es)? the job left behind)?, and reports it failed\.\u001b\[0;m\n$/.exec(text);
      expect(match, text).not.toBeNull();
      const lastOutput = Date.parse(match![1]!);
      const recovered = Date.parse(match![2]!);
      expect(lastOutput).toBeLessThanOrEqual(killedAt);
      expect(recovered).toBeGreaterThanOrEqual(killedAt);
      expect(recovered).toBeLessThanOrEqual(Date.now());
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
  });
});
