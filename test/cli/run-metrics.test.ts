import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { get, metricValue, startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface DebugJob {
  id: number;
  runner: string;
  stage: string;
  started: string;
  traceBytes: number;
}

describe('run: metrics and health (listen_address)', () => {
  it('serves /metrics, /healthz, /readyz and /debug/jobs whose figures follow the jobs', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `concurrent = 3\ncheck_interval = 1\nlog_format = "json"\nlisten_address = "127.0.0.1:0"\n[[runners]]\n  name = "metered"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n  limit = 2\n  trace_update_interval = 0.2\n`);
    const daemon = startDaemon(config);
    try {
      const url = await daemon.statusUrl();
      expect((await get(`${url}/healthz`)).status).toBe(200);
      await waitUntil(async () => (await get(`${url}/readyz`)).status === 200, 30_000, 'ready');
      expect((await get(`${url}/readyz`)).json()).toEqual({ ready: true, runners: [{ runner: 'metered', ready: true }] });

      const before = (await get(`${url}/metrics`)).text;
      expect(metricValue(before, 'ci_runner_concurrent')).toBe(3);
      expect(metricValue(before, 'ci_runner_limit', { runner: 'metered' })).toBe(2);
      expect(metricValue(before, 'ci_runner_version_info')).toBe(1);
      expect(before).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(metricValue(before, 'ci_runner_api_requests_total', { runner: 'metered', endpoint: 'requestBuild', status: '204' })).toBeGreaterThan(0);

      const p = await t.pipeline('slow:\n  script:\n    - for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.5; done\n');
      const id = p.jobs[0]!.id;
      let seen: DebugJob | undefined;
      await waitUntil(async () => {
        seen = (await get(`${url}/debug/jobs`)).json<{ jobs: DebugJob[] }>().jobs.find((j) => j.id === id && j.stage === 'step_script' && j.traceBytes > 0);
        return seen !== undefined;
      }, 30_000, 'job in build_script with trace sent');
      expect(seen).toMatchObject({ runner: 'metered' });
      expect(Date.parse(seen!.started)).not.toBeNaN();
      const during = (await get(`${url}/metrics`)).text;
      expect(metricValue(during, 'ci_runner_jobs_running', { runner: 'metered', stage: 'step_script', executor: 'shell' })).toBe(1);
      const firstBytes = seen!.traceBytes;
      await waitUntil(async () => ((await get(`${url}/debug/jobs`)).json<{ jobs: DebugJob[] }>().jobs.find((j) => j.id === id)?.traceBytes ?? 0) > firstBytes, 30_000, 'trace bytes grow');

      await t.waitForJob(id, (v) => v.status === 'success', 30_000);
      await waitUntil(async () => metricValue((await get(`${url}/metrics`)).text, 'ci_runner_jobs_finished_total', { state: 'success' }) === 1, 10_000, 'finished counted');
      const after = (await get(`${url}/metrics`)).text;
      expect(metricValue(after, 'ci_runner_jobs_finished_total', { runner: 'metered', state: 'success', failure_reason: 'none' })).toBe(1);
      expect(metricValue(after, 'ci_runner_jobs_running')).toBe(0);
      expect(metricValue(after, 'ci_runner_trace_sent_bytes_total', { runner: 'metered' })).toBeGreaterThan(firstBytes);
      expect(metricValue(after, 'ci_runner_job_duration_seconds_count', { runner: 'metered', state: 'success' })).toBe(1);
      expect(metricValue(after, 'ci_runner_api_requests_total', { endpoint: 'patchTrace', status: '202' })).toBeGreaterThan(0);
      expect((await get(`${url}/debug/jobs`)).json()).toEqual({ jobs: [] });
      // No job id and no token in any label.
      expect(after).not.toMatch(/\b(job|job_id|id|url)="/);
      expect(after).not.toContain(token);

      const failing = await t.pipeline('fails:\n  script:\n    - exit 3\n');
      await t.waitForJob(failing.jobs[0]!.id, (v) => v.status === 'failed', 30_000);
      await waitUntil(async () => metricValue((await get(`${url}/metrics`)).text, 'ci_runner_jobs_finished_total', { runner: 'metered', state: 'failed', failure_reason: 'script_failure' }) === 1, 10_000, 'failure counted with its class');
      expect((await get(`${url}/nope`)).status).toBe(404);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });

  it('answers /readyz 503 with the reason per runner while the coordinator refuses the token', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `check_interval = 1\nlog_format = "json"\n[[runners]]\n  name = "refused"\n  url = "${t.url}"\n  token = "not-a-runner-token"\n  builds_dir = "${d.builds}"\n`);
    const daemon = startDaemon(config, ['--listen-address', '127.0.0.1:0']);
    try {
      const url = await daemon.statusUrl();
      await waitUntil(() => daemon.output().includes('was it deleted or its token revoked?'), 30_000, '403 logged');
      const ready = await get(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.json()).toMatchObject({ ready: false, runners: [{ runner: 'refused', ready: false, reason: expect.stringContaining('refused its token (403)') }] });
      expect((await get(`${url}/healthz`)).status).toBe(200);
      const metrics = (await get(`${url}/metrics`)).text;
      expect(metricValue(metrics, 'ci_runner_errors_total', { kind: 'runner_forbidden' })).toBeGreaterThan(0);
      expect(metricValue(metrics, 'ci_runner_api_requests_total', { runner: 'refused', endpoint: 'requestBuild', status: '403' })).toBeGreaterThan(0);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });

  it('refuses a --listen-address that is not host:port with exit code 2', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, 'log_format = "json"\n');
    const daemon = startDaemon(config, ['--listen-address', '9252']);
    expect((await daemon.child).exitCode).toBe(2);
    expect(daemon.output()).toContain('--listen-address: "9252" is not host:port');
  });
});
