import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { metricValue } from '../cli/daemon.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const scrape = async (): Promise<string> => {
  const response = await fetch(`${t.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
};

describe('reference server /metrics and /healthz', () => {
  it('answers /healthz', async () => {
    const response = await fetch(`${t.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('reports builds by status, the queue, runners\' last contact and requests by route and status', async () => {
    const { id, token } = await t.registerRunner();
    const before = await scrape();
    const contact = metricValue(before, 'ci_server_runner_last_contact_timestamp_seconds', { runner_id: String(id) });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const p = await t.pipeline('one:\n  script:\n    - echo 1\ntwo:\n  script:\n    - echo 2\n');
    const queued = await scrape();
    expect(metricValue(queued, 'ci_server_queue_depth')).toBeGreaterThanOrEqual(2);
    const pendingBefore = metricValue(queued, 'ci_server_builds', { status: 'pending' });
    const client = new RunnerApiClient({ url: t.url });
    try {
      const got = await client.requestBuild(token, undefined);
      expect(got.kind).toBe('build');
      await client.requestBuild('no-such-token', undefined);
    } finally {
      await client.close();
    }
    const after = await scrape();
    expect(metricValue(after, 'ci_server_builds', { status: 'pending' })).toBe(pendingBefore - 1);
    expect(metricValue(after, 'ci_server_builds', { status: 'running' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(after, 'ci_server_queue_depth')).toBe(pendingBefore - 1);
    expect(metricValue(after, 'ci_server_runner_last_contact_timestamp_seconds', { runner_id: String(id) })).toBeGreaterThan(contact);
    expect(metricValue(after, 'ci_server_http_requests_total', { route: 'request_build', method: 'POST', status: '201' })).toBe(1);
    expect(metricValue(after, 'ci_server_http_requests_total', { route: 'request_build', method: 'POST', status: '403' })).toBe(1);
    expect(metricValue(after, 'ci_server_http_requests_total', { route: 'metrics', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(after).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(after).not.toContain(token);
    for (const job of p.jobs) t.server.cancelJob(job.id);
  });
});
