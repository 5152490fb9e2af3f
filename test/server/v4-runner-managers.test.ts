/**
 * Issue 34 item 8: what a token can make the server store about a runner. A job's token (`PUT
 * /jobs/:id`) neither adds runner managers nor rewrites the runner's `info`: as GitLab, a job update
 * only tells that the runner, and the manager that took the job, are alive. A runner token adds
 * managers with its `system_id`, at most `MAX_MANAGERS` per runner (the one heard from longest ago
 * makes room), and `system_id` and `info` fields have GitLab's length limits (400 past them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MANAGERS } from '../../src/server/state/runner-contact.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';
import { r14Info, registerV4, requestJob, takeJob, updateJob, v4 } from './v4-http.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface ListedRunner {
  id: number;
  info: Record<string, string>;
  contacted_at: string | null;
  managers: Array<{ system_id: string; contacted_at: string | null; version?: string }>;
}

async function listed(id: number): Promise<ListedRunner> {
  const runners = JSON.parse((await raw(t.url, 'GET', '/admin/api/runners', { headers: { 'private-token': t.server.adminToken } })).text) as ListedRunner[];
  return runners.find((runner) => runner.id === id)!;
}

describe('runner managers and info', () => {
  it("a job's token adds no manager and leaves the runner's info alone, however many system_ids it sends", async () => {
    const runner = await registerV4(t);
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, runner.token, { system_id: 'r_000000000001' });
    const before = await listed(runner.id);
    expect(before.managers.map((m) => m.system_id)).toEqual(['r_000000000001']);
    for (let n = 0; n < 20; n += 1) {
      const update = await updateJob(t, job, { state: 'running', system_id: `s_forged${String(n).padStart(6, '0')}`, info: { ...r14Info(), version: `99.${n}`, name: 'forged' } });
      expect(update.status).toBe(200);
    }
    const after = await listed(runner.id);
    expect(after.managers.map((m) => m.system_id)).toEqual(['r_000000000001']);
    expect(after.info).toEqual(before.info);
    expect(after.info.version).toBe('14.7.1');
    // It still counts as the runner's (and its manager's) sign of life.
    expect(after.contacted_at).not.toBeNull();
    expect(Date.parse(after.managers[0]!.contacted_at!)).toBeGreaterThanOrEqual(Date.parse(before.managers[0]!.contacted_at!));
    expect((await updateJob(t, job, { state: 'success' })).status).toBe(200);
  });

  it(`keeps at most ${MAX_MANAGERS} managers per runner: a new system_id past that replaces the one heard from longest ago`, async () => {
    const runner = await registerV4(t);
    for (let n = 0; n < MAX_MANAGERS + 5; n += 1) {
      expect((await requestJob(t, runner.token, { system_id: `r_${String(n).padStart(12, '0')}` })).status).toBe(204);
    }
    const managers = (await listed(runner.id)).managers.map((m) => m.system_id);
    expect(managers).toHaveLength(MAX_MANAGERS);
    expect(managers).not.toContain('r_000000000000');
    expect(managers).toContain(`r_${String(MAX_MANAGERS + 4).padStart(12, '0')}`);
    // A known one keeps its place and is not counted twice.
    expect((await requestJob(t, runner.token, { system_id: `r_${String(MAX_MANAGERS + 4).padStart(12, '0')}` })).status).toBe(204);
    expect((await listed(runner.id)).managers).toHaveLength(MAX_MANAGERS);
  });

  it('refuses a system_id over 64 characters and info fields over their limits (400), storing nothing', async () => {
    const runner = await registerV4(t);
    const long = await requestJob(t, runner.token, { system_id: `r_${'x'.repeat(63)}` });
    expect(long.status).toBe(400);
    expect(JSON.parse(long.text).message).toMatch(/system_id/);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: runner.token, system_id: 's'.repeat(65) } })).status).toBe(400);
    const bigVersion = await requestJob(t, runner.token, { system_id: 'r_000000000009', info: { ...r14Info(), version: 'v'.repeat(2049) } });
    expect(bigVersion.status).toBe(400);
    expect(JSON.parse(bigVersion.text).message).toMatch(/info\.version/);
    expect((await requestJob(t, runner.token, { info: { ...r14Info(), platform: 'p'.repeat(256) } })).status).toBe(400);
    expect((await v4(t.url, 'POST', '/runners', { json: { token: t.server.registrationToken, info: { name: 'n'.repeat(256) } } })).status).toBe(400);
    const stored = await listed(runner.id);
    expect(stored.managers).toEqual([]);
    expect(stored.info.version).toBe('14.7.1');
    // The same limits over API v1.
    expect((await api(t.url, 'POST', '/runners/register.json', { json: { token: t.server.registrationToken, info: { ...LEGACY_INFO, revision: 'r'.repeat(256) } } })).status).toBe(400);
    expect((await api(t.url, 'POST', '/builds/register.json', { json: { token: runner.token, info: { ...LEGACY_INFO, architecture: 'a'.repeat(256) } } })).status).toBe(400);
    // At the limits, all is well.
    expect((await requestJob(t, runner.token, { system_id: `r_${'x'.repeat(62)}`, info: { ...r14Info(), version: 'v'.repeat(2048) } })).status).toBe(204);
  });
});
