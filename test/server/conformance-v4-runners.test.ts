/** docs/protocol-v4.md §1–§2 over raw HTTP: registration tokens and glrt- tokens, verify, managers, delete, reset. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';
import { r14Info, registerV4, requestJob, takeJob, v4 } from './v4-http.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const admin = (): Record<string, string> => ({ 'private-token': t.server.adminToken });

async function createRunner(fields: Record<string, unknown> = {}): Promise<{ id: number; token: string; registration: string }> {
  const response = await raw(t.url, 'POST', '/admin/api/runners', { json: { description: 'made by an admin', ...fields }, headers: admin() });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as { id: number; token: string; registration: string };
}

let runners: Array<Record<string, unknown>> = [];
function listed(id: number): Record<string, unknown> | undefined {
  return runners.find((runner) => runner.id === id);
}
async function refreshRunners(): Promise<void> {
  runners = JSON.parse((await raw(t.url, 'GET', '/admin/api/runners', { headers: admin() })).text) as Array<Record<string, unknown>>;
}

describe('V1 POST /runners (registration token)', () => {
  it('answers 201 with id, a legacy (non-glrt) token and token_expires_at null', async () => {
    const response = await v4(t.url, 'POST', '/runners', { json: { token: t.server.registrationToken, description: 'r14', tag_list: 'a, b', run_untagged: false, locked: true, info: r14Info() } });
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(response.text) as { id: number; token: string; token_expires_at: null };
    expect(body.id).toBeGreaterThan(0);
    expect(body.token).toMatch(/^[0-9a-f]{30}$/);
    expect(body.token_expires_at).toBeNull();
    await refreshRunners();
    expect(listed(body.id)).toMatchObject({ tags: ['a', 'b'], run_untagged: false, locked: true, registration: 'registration', project_id: null });
  });

  it('takes a project runners token (a project runner), tags as an array, paused, access_level and maximum_timeout', async () => {
    const project = (JSON.parse((await raw(t.url, 'GET', '/admin/api/projects', { headers: admin() })).text) as Array<{ id: number; runners_token: string }>)[0]!;
    const response = await v4(t.url, 'POST', '/runners', {
      json: { token: project.runners_token, tag_list: ['x'], paused: true, access_level: 'ref_protected', maximum_timeout: 900, maintenance_note: 'rack 4' },
    });
    expect(response.status).toBe(201);
    await refreshRunners();
    expect(listed((JSON.parse(response.text) as { id: number }).id)).toMatchObject({ project_id: project.id, active: false, access_level: 'ref_protected', maximum_timeout: 900, maintenance_note: 'rack 4' });
  });

  it('answers 403 for an unknown registration token and 400 for bad settings', async () => {
    expect((await v4(t.url, 'POST', '/runners', { json: { token: 'nope' } })).status).toBe(403);
    const token = t.server.registrationToken;
    for (const fields of [
      { active: true, paused: false },
      { tag_list: '', run_untagged: false },
      { maximum_timeout: 599 },
      { maximum_timeout: 'soon' },
      { access_level: 'everything' },
    ]) {
      const response = await v4(t.url, 'POST', '/runners', { json: { token, ...fields } });
      expect(response.status, JSON.stringify(fields)).toBe(400);
      expect((JSON.parse(response.text) as { message: string }).message).toMatch(/^400/);
    }
    // A missing token is a validation error, as Grape's required params.
    expect((await v4(t.url, 'POST', '/runners', { json: {} })).status).toBe(400);
  });

  it('a runner registered over v1 works over v4 and one registered over v4 over v1: one runner, one token', async () => {
    const viaV1 = JSON.parse((await api(t.url, 'POST', '/runners/register.json', { json: { token: t.server.registrationToken, info: LEGACY_INFO } })).text) as { token: string };
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: viaV1.token } })).status).toBe(200);
    const viaV4 = await registerV4(t);
    expect((await api(t.url, 'POST', '/builds/register.json', { json: { token: viaV4.token, info: LEGACY_INFO } })).status).toBe(204);
  });
});

describe('runners created on the server (glrt- tokens)', () => {
  it('the admin API creates a runner whose glrt- token is shown once and verifies with a system_id', async () => {
    const created = await createRunner({ tags: ['docker'], run_untagged: false });
    expect(created.token).toMatch(/^glrt-[A-Za-z0-9]{20}$/);
    expect(created.registration).toBe('created');
    await refreshRunners();
    expect(JSON.stringify(listed(created.id))).not.toContain(created.token);
    const verify = await v4(t.url, 'POST', '/runners/verify', { json: { token: created.token, system_id: 's_0123456789ab', info: r14Info() } });
    expect(verify.status).toBe(200);
    expect(JSON.parse(verify.text)).toEqual({ id: created.id, token: created.token, token_expires_at: null });
    await refreshRunners();
    expect(listed(created.id)).toMatchObject({ managers: [expect.objectContaining({ system_id: 's_0123456789ab', version: '14.7.1', executor: 'shell' })] });
  });

  it('gives every runner a token unique in its short form', async () => {
    const tokens = await Promise.all(Array.from({ length: 20 }, async () => (await createRunner()).token));
    expect(new Set(tokens.map((token) => token.slice('glrt-'.length, 'glrt-'.length + 8))).size).toBe(20);
    expect(new Set(tokens.map((token) => token.slice(0, 8))).size).toBe(20);
  });

  it('refuses bad settings with 400 and unknown projects', async () => {
    for (const fields of [{ tags: [], run_untagged: false }, { project: 'no/such' }, { access_level: 'x' }, { maximum_timeout: 10 }]) {
      expect((await raw(t.url, 'POST', '/admin/api/runners', { json: fields, headers: admin() })).status, JSON.stringify(fields)).toBe(400);
    }
  });
});

describe('V4 verify, V2 delete, V3 managers, V5 reset', () => {
  it('verify answers 403 for an unknown token', async () => {
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: 'gone' } })).status).toBe(403);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: {} })).status).toBe(403);
  });

  it('a system_id on a job request records a manager; DELETE /runners/managers removes it (404 when unknown, 400 without one)', async () => {
    const { id, token } = await registerV4(t);
    expect((await requestJob(t, token, { system_id: 'r_abcdefghijkl' })).status).toBe(204);
    await refreshRunners();
    expect((listed(id)?.managers as unknown[]).length).toBe(1);
    expect((await v4(t.url, 'DELETE', '/runners/managers', { json: { token, system_id: 'r_other' } })).status).toBe(404);
    expect((await v4(t.url, 'DELETE', '/runners/managers', { json: { token } })).status).toBe(400);
    expect((await v4(t.url, 'DELETE', '/runners/managers', { json: { token, system_id: 'r_abcdefghijkl' } })).status).toBe(204);
    await refreshRunners();
    expect(listed(id)?.managers).toEqual([]);
    // The runner itself is still there.
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token } })).status).toBe(200);
  });

  it('DELETE /runners answers 204 with a JSON body, then the token is dead (403)', async () => {
    const { token } = await registerV4(t);
    const response = await v4(t.url, 'DELETE', '/runners', { json: { token } });
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect((await v4(t.url, 'DELETE', '/runners', { json: { token } })).status).toBe(403);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token } })).status).toBe(403);
  });

  it('deleting a runner fails the job it was running', async () => {
    const { token } = await registerV4(t);
    await t.pipeline('a:\n  script: [x]\n');
    const job = await takeJob(t, token);
    expect((await v4(t.url, 'DELETE', '/runners', { json: { token } })).status).toBe(204);
    expect(t.server.getJob(job.id)?.status).toBe('failed');
  });

  it('reset_authentication_token answers 201 with a new token of the same kind; the old one stops working at once', async () => {
    for (const runner of [await registerV4(t), await createRunner()]) {
      const response = await v4(t.url, 'POST', '/runners/reset_authentication_token', { json: { token: runner.token } });
      expect(response.status).toBe(201);
      const body = JSON.parse(response.text) as { token: string; token_expires_at: null };
      expect(body.token).not.toBe(runner.token);
      expect(body.token.startsWith('glrt-')).toBe(runner.token.startsWith('glrt-'));
      expect(body.token_expires_at).toBeNull();
      expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: runner.token } })).status).toBe(403);
      expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: body.token } })).status).toBe(200);
    }
    expect((await v4(t.url, 'POST', '/runners/reset_authentication_token', { json: { token: 'nope' } })).status).toBe(403);
  });

  it('the admin API resets a token, pauses, resumes and deletes a runner', async () => {
    const { id, token } = await createRunner();
    const reset = await raw(t.url, 'POST', `/admin/api/runners/${id}/reset_token`, { headers: admin() });
    expect(reset.status).toBe(200);
    const fresh = (JSON.parse(reset.text) as { token: string }).token;
    expect(fresh).toMatch(/^glrt-/);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token } })).status).toBe(403);
    expect(JSON.parse((await raw(t.url, 'POST', `/admin/api/runners/${id}/pause`, { headers: admin() })).text)).toMatchObject({ id, active: false });
    expect(JSON.parse((await raw(t.url, 'POST', `/admin/api/runners/${id}/resume`, { headers: admin() })).text)).toMatchObject({ id, active: true });
    expect((await raw(t.url, 'DELETE', `/admin/api/runners/${id}`, { headers: admin() })).status).toBe(204);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: fresh } })).status).toBe(403);
    expect((await raw(t.url, 'DELETE', `/admin/api/runners/${id}`, { headers: admin() })).status).toBe(404);
  });
});
