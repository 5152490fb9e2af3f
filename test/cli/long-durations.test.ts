/**
 * Durations past Node's timer limit (2^31-1 ms, ~24.8 days) from the config and from the server mean
 * what they say: "never cancel" shutdown timeouts and month-long job timeouts do not fire at once.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { NODE_CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

const THIRTY_DAYS_S = 30 * 86_400;
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const trace = async (id: number) => (await t.server.getTrace(id)).toString('utf8');

describe('durations longer than a Node timer', () => {
  const start = async (): Promise<{ config: string; job: { id: number } }> => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `concurrent = 1\ncheck_interval = 1\nshutdown_timeout = ${THIRTY_DAYS_S}\nlog_format = "json"\n\n[[runners]]\n  name = "long"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n`, { mode: 0o600 });
    const p = await t.pipeline('long:\n  timeout: 30 days\n  script:\n    - echo started\n    - sleep 2\n    - echo finished\n');
    return { config, job: p.jobs[0]! };
  };

  it('runs a job whose timeout is 30 days to its end after SIGQUIT (graceful)', async () => {
    const { config, job } = await start();
    const daemon = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    await waitUntil(async () => (await trace(job.id)).includes('started'), 30_000, 'job started');
    daemon.kill('SIGQUIT');
    const result = await daemon;
    expect(result.exitCode, result.all).toBe(0);
    const log = await trace(job.id);
    expect(log).toContain('finished');
    expect(log).not.toContain('execution took longer');
    expect(t.server.getJob(job.id)?.status, log).toBe('success');
  });

  it('waits for the aborted job after SIGTERM with shutdown_timeout = 30 days instead of giving up at once', async () => {
    const { config, job } = await start();
    const daemon = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    await waitUntil(async () => (await trace(job.id)).includes('started'), 30_000, 'job started');
    daemon.kill('SIGTERM');
    const result = await daemon;
    expect(result.all).not.toContain('shutdown timed out');
    expect(result.all).not.toContain('TimeoutOverflowWarning');
    expect(result.exitCode, result.all).toBe(0);
    expect(t.server.getJob(job.id)?.status).toBe('failed');
  });
});
