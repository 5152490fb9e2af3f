/** docs/protocol-v1.md §2, §4.1–§4.3 (E1 register, E2 delete, E3 verify) over raw HTTP. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

async function register(body: Record<string, unknown>, path = '/runners/register.json') {
  return api(t.url, 'POST', path, { json: { info: { ...LEGACY_INFO, executor: undefined }, ...body } });
}

describe('E1 register a runner', () => {
  it('answers 201 with id and a 30-hex token and exact application/json', async () => {
    const response = await register({ token: t.server.registrationToken, description: 'host-01', tag_list: 'docker, linux', run_untagged: false });
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.text) as { id: number; token: string };
    expect(body.id).toBeGreaterThan(0);
    expect(body.token).toMatch(/^[0-9a-f]{30}$/);
  });

  it('accepts the route without .json and a form body', async () => {
    const response = await api(t.url, 'POST', '/runners/register', { form: { token: t.server.registrationToken, run_untagged: 'true' } });
    expect(response.status).toBe(201);
  });

  it('accepts the token as a query parameter', async () => {
    const response = await api(t.url, 'POST', `/runners/register?token=${t.server.registrationToken}`);
    expect(response.status).toBe(201);
  });

  it('answers 400 with a message when the token is missing or blank', async () => {
    for (const body of [{}, { token: '' }]) {
      const response = await register(body);
      expect(response.status).toBe(400);
      expect(JSON.parse(response.text)).toEqual({ message: '400 (Bad request) "token" not given' });
    }
  });

  it('answers 403 (never 401) for a wrong registration token', async () => {
    const response = await register({ token: 'not-the-token' });
    expect(response.status).toBe(403);
    expect(JSON.parse(response.text)).toEqual({ message: '403 Forbidden' });
  });

  it('refuses a runner with no tags that may not run untagged builds', async () => {
    const response = await register({ token: t.server.registrationToken, run_untagged: false });
    expect(response.status).toBe(404);
  });

  it('registers a specific runner with a project runners token', async () => {
    const projects = await raw(t.url, 'GET', '/admin/api/projects', { headers: { 'private-token': t.server.adminToken } });
    const [project] = JSON.parse(projects.text) as Array<{ name: string; runners_token: string }>;
    expect(project?.name).toBe('group/project');
    const response = await register({ token: project?.runners_token, tag_list: ['a', 'b'] });
    expect(response.status).toBe(201);
    const runners = await raw(t.url, 'GET', '/admin/api/runners', { headers: { 'private-token': t.server.adminToken } });
    const id = (JSON.parse(response.text) as { id: number }).id;
    const listed = (JSON.parse(runners.text) as Array<{ id: number; project_id: number | null; tags: string[] }>).find((r) => r.id === id);
    expect(listed).toMatchObject({ project_id: 1, tags: ['a', 'b'] });
  });

  it('makes runner tokens unique in their first 8 characters', async () => {
    const prefixes = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const { token } = await t.registerRunner();
      prefixes.add(token.slice(0, 8));
    }
    expect(prefixes.size).toBe(20);
  });
});

describe('E2 delete a runner', () => {
  it('answers 200 (never 204) with a JSON body sent on DELETE, and the token stops working', async () => {
    const { token } = await t.registerRunner();
    const response = await api(t.url, 'DELETE', '/runners/delete', { json: { token } });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    const verify = await api(t.url, 'PUT', '/builds/-1', { json: { token } });
    expect(verify.status).toBe(403);
  });

  it('reads a form body on DELETE and accepts POST as an alias', async () => {
    const first = await t.registerRunner();
    expect((await api(t.url, 'DELETE', '/runners/delete.json', { form: { token: first.token } })).status).toBe(200);
    const second = await t.registerRunner();
    expect((await api(t.url, 'POST', '/runners/delete', { json: { token: second.token } })).status).toBe(200);
  });

  it('answers 400 without a token and 403 for an unknown one', async () => {
    expect((await api(t.url, 'DELETE', '/runners/delete', { json: {} })).status).toBe(400);
    expect((await api(t.url, 'DELETE', '/runners/delete', { json: { token: 'f'.repeat(30) } })).status).toBe(403);
  });
});

describe('E3 verify (PUT /builds/-1)', () => {
  it('answers 404 for a valid runner token: negative ids reach the token check', async () => {
    const { token } = await t.registerRunner();
    const response = await api(t.url, 'PUT', '/builds/-1', { json: { token } });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.text)).toHaveProperty('message');
  });

  it('answers 403 for an unknown or missing runner token', async () => {
    expect((await api(t.url, 'PUT', '/builds/-1', { json: { token: 'nope' } })).status).toBe(403);
    expect((await api(t.url, 'PUT', '/builds/-1', { json: {} })).status).toBe(403);
  });
});

describe('routing and errors (§2.4)', () => {
  it('answers unknown routes with 404 JSON', async () => {
    for (const [method, path] of [['GET', '/ci/api/v1/nothing'], ['POST', '/ci/api/v1/builds/x/y'], ['GET', '/elsewhere']] as const) {
      const response = await raw(t.url, method, path);
      expect(response.status).toBe(404);
      expect(response.headers['content-type']).toBe('application/json');
      expect(JSON.parse(response.text)).toHaveProperty('message');
    }
  });

  it('answers malformed JSON with 400 and a message', async () => {
    const response = await api(t.url, 'POST', '/builds/register.json', { body: '{"token":', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).message).toMatch(/malformed JSON/);
  });

  it('answers an oversized JSON body with 413', async () => {
    const big = JSON.stringify({ token: 'x', pad: 'p'.repeat(2 * 1024 * 1024) });
    const response = await api(t.url, 'POST', '/runners/register.json', { body: big, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(413);
  });

  it('answers a known path with the wrong method with 405', async () => {
    const response = await api(t.url, 'GET', '/builds/register');
    expect(response.status).toBe(405);
  });
});
