import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { get, metricValue, startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';
import { shortToken } from '../../src/util/short-token.js';

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
  it("serves GitLab Runner's series, /debug/jobs/list and the health routes, with figures that follow a succeeded and a failed job", async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const short = shortToken(token);
    const config = join(d.root, 'config.toml');
    await writeFile(config, `concurrent = 3\ncheck_interval = 1\nlog_format = "json"\nlisten_address = "127.0.0.1:0"\n[[runners]]\n  name = "metered"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n  limit = 2\n  request_concurrency = 2\n  trace_update_interval = 0.2\n`);
    const daemon = startDaemon(config);
    try {
      const url = await daemon.statusUrl();
      const systemId = (await readFile(join(d.root, '.runner_system_id'), 'utf8')).trim();
      const runner = { runner: short, runner_name: 'metered', system_id: systemId };
      expect((await get(`${url}/healthz`)).status).toBe(200);
      expect((await get(`${url}/health/ready`)).text).toBe('ready\n');
      expect((await get(`${url}/debug/process/state`)).text).toBe('running\n');
      await waitUntil(async () => (await get(`${url}/readyz`)).status === 200, 30_000, 'ready');
      expect((await get(`${url}/readyz`)).json()).toEqual({ ready: true, runners: [{ runner: 'metered', ready: true }] });

      const before = (await get(`${url}/metrics`)).text;
      expect(metricValue(before, 'gitlab_runner_concurrent')).toBe(3);
      expect(metricValue(before, 'gitlab_runner_limit', runner)).toBe(2);
      expect(metricValue(before, 'gitlab_runner_request_concurrency_hard_limit', { runner: short, system_id: systemId })).toBe(2);
      expect(metricValue(before, 'gitlab_runner_version_info', { name: 'ci-runner' })).toBe(1);
      expect(before).toMatch(/^gitlab_runner_version_info\{.*architecture="[a-z0-9]+".*\} 1$/m);
      expect(metricValue(before, 'gitlab_runner_process_state_info', { state: 'running' })).toBe(1);
      expect(metricValue(before, 'gitlab_runner_jobs', { ...runner, state: 'idle', stage: 'idle', executor_stage: 'idle' })).toBe(0);
      expect(before).toMatch(/^gitlab_runner_jobs\{.*state="idle".*\} 0$/m);
      expect(metricValue(before, 'gitlab_runner_jobs_total', runner)).toBe(0);
      expect(metricValue(before, 'gitlab_runner_configuration_loaded_total')).toBe(1);
      expect(before).toMatch(/^process_resident_memory_bytes \d+/m);
      await waitUntil(async () => metricValue((await get(`${url}/metrics`)).text, 'gitlab_runner_api_request_statuses_total', { runner: short, system_id: systemId, endpoint: 'request_job', status: '204', method: 'post' }) > 0, 30_000, 'an empty job request counted');
      // No series of ours under a name GitLab Runner has.
      expect(before).not.toMatch(/^ci_runner_(jobs_running|jobs_finished_total|concurrent|limit|api_requests_total|version_info)\b/m);

      const p = await t.pipeline('slow:\n  script:\n    - for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.5; done\n');
      const id = p.jobs[0]!.id;
      let seen: DebugJob | undefined;
      await waitUntil(async () => {
        seen = (await get(`${url}/debug/jobs`)).json<{ jobs: DebugJob[] }>().jobs.find((j) => j.id === id && j.stage === 'step_script' && j.traceBytes > 0);
        return seen !== undefined;
      }, 30_000, 'job in step_script with trace sent');
      expect(seen).toMatchObject({ runner: 'metered' });
      const list = await fetch(`${url}/debug/jobs/list`);
      expect(list.headers.get('x-list-version')).toBe('2');
      expect(await list.text()).toMatch(new RegExp(`^url=\\S+/-/jobs/${id} state=running stage=step_script executor_stage=prepare duration=[0-9.hms]+s\n$`));
      const during = (await get(`${url}/metrics`)).text;
      expect(metricValue(during, 'gitlab_runner_jobs', { ...runner, state: 'running', stage: 'step_script', executor_stage: 'prepare' })).toBe(1);
      const firstBytes = seen!.traceBytes;

      await t.waitForJob(id, (v) => v.status === 'success', 30_000);
      await waitUntil(async () => (await get(`${url}/debug/jobs`)).json<{ jobs: DebugJob[] }>().jobs.length === 0, 10_000, 'job gone from the table');
      const after = (await get(`${url}/metrics`)).text;
      expect(metricValue(after, 'gitlab_runner_jobs_total', runner)).toBe(1);
      expect(metricValue(after, 'gitlab_runner_job_execution_mode_total', { mode: 'traditional', executor: 'shell' })).toBe(1);
      expect(metricValue(after, 'gitlab_runner_jobs', { state: 'running' })).toBe(0);
      expect(metricValue(after, 'gitlab_runner_job_duration_seconds_count', { ...runner, mode: 'traditional' })).toBe(1);
      expect(metricValue(after, 'gitlab_runner_job_duration_seconds_bucket', { ...runner, mode: 'traditional', le: '30' })).toBe(1);
      expect(metricValue(after, 'gitlab_runner_job_queue_duration_seconds_count', runner)).toBe(1);
      expect(metricValue(after, 'gitlab_runner_failed_jobs_total')).toBe(0);
      expect(metricValue(after, 'ci_runner_trace_sent_bytes_total', runner)).toBeGreaterThan(firstBytes);
      expect(metricValue(after, 'gitlab_runner_api_request_statuses_total', { runner: short, endpoint: 'patch_trace', status: '202', method: 'patch' })).toBeGreaterThan(0);
      expect(metricValue(after, 'gitlab_runner_api_request_statuses_total', { runner: short, endpoint: 'update_job', status: '200', method: 'put' })).toBeGreaterThan(0);
      expect(metricValue(after, 'gitlab_runner_api_request_duration_seconds_count', { runner: short, endpoint: 'request_job', status_class: '2xx', method: 'post' })).toBeGreaterThan(0);
      expect((await get(`${url}/debug/jobs/list`)).text).toBe('');
      // No job id and no whole token in any label.
      expect(after).not.toMatch(/\b(job|job_id|id|url)="/);
      expect(after).not.toContain(token);

      const failing = await t.pipeline('fails:\n  script:\n    - exit 3\n');
      await t.waitForJob(failing.jobs[0]!.id, (v) => v.status === 'failed', 30_000);
      const failed = { runner: short, runner_name: 'metered', failure_reason: 'script_failure', mode: 'traditional' };
      await waitUntil(async () => metricValue((await get(`${url}/metrics`)).text, 'gitlab_runner_failed_jobs_total', failed) === 1, 10_000, 'failure counted with its reason');
      const end = (await get(`${url}/metrics`)).text;
      expect(metricValue(end, 'gitlab_runner_jobs_total', runner)).toBe(2);
      // The config's mode 0644 was warned about at start: GitLab Runner's errors_total counts warnings.
      expect(metricValue(end, 'gitlab_runner_errors_total', { level: 'warning' })).toBeGreaterThan(0);
      expect(end).toMatch(/^gitlab_runner_errors_total\{level="error"\} \d+$/m);
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
      expect(metricValue(metrics, 'gitlab_runner_api_request_statuses_total', { runner: 'not-a-run', endpoint: 'request_job', status: '403' })).toBeGreaterThan(0);
      expect(metricValue(metrics, 'gitlab_runner_worker_health_check_failures_total', { runner: 'not-a-run', runner_name: 'refused' })).toBeGreaterThan(0);
      // The 403 was logged as a warning or an error, which GitLab Runner's errors_total counts.
      expect(metricValue(metrics, 'gitlab_runner_errors_total', { level: 'warning' }) + metricValue(metrics, 'gitlab_runner_errors_total', { level: 'error' })).toBeGreaterThan(0);
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
