/**
 * `register`, `verify`, `unregister` and `reset-token` against the reference server over `/api/v4`:
 * a registration token, and a runner created on the server (a `glrt-` token) taken into use with
 * this host's system id, kept in `.runner_system_id` beside config.toml.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../server/raw-http.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const admin = (): Record<string, string> => ({ 'private-token': t.server.adminToken });

async function createdRunner(): Promise<{ id: number; token: string }> {
  const response = await raw(t.url, 'POST', '/admin/api/runners', { json: { description: 'made in the web page', run_untagged: true }, headers: admin() });
  expect(response.status, response.text).toBe(201);
  return JSON.parse(response.text) as { id: number; token: string };
}

async function runnerOnServer(id: number): Promise<{ managers: Array<{ system_id: string }> } | undefined> {
  const list = JSON.parse((await raw(t.url, 'GET', '/admin/api/runners', { headers: admin() })).text) as Array<{ id: number; managers: Array<{ system_id: string }> }>;
  return list.find((runner) => runner.id === id);
}

async function entries(config: string) {
  return parseConfig(await readFile(config, 'utf8'), config).config.runners;
}

describe('register over v4', () => {
  it('registers with a registration token at /api/v4, keeps a system id beside config.toml and leaves api unset', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'v4-box', '--access-level', 'ref_protected', '--maximum-timeout', '3600']);
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stdout).toContain('API v4');
    const text = await readFile(config, 'utf8');
    expect(text).not.toMatch(/^\s*api\s*=/m);
    expect((await entries(config))[0]).toMatchObject({ name: 'v4-box', api: 'auto' });
    expect((await readFile(join(root, '.runner_system_id'), 'utf8')).trim()).toMatch(/^[sr]_[0-9a-zA-Z]{12}$/);
  });

  it('takes a runner created on the server (glrt-) into use with this host\'s system id, and unregisters only this host', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const created = await createdRunner();
    expect(created.token.startsWith('glrt-')).toBe(true);
    // GitLab Runner 19 refuses the settings reserved to the server with an authentication token.
    const refused = await cli(['register', '-c', config, '-n', '--url', t.url, '--token', created.token, '--name', 'made-there', '--tag-list', 'reserved']);
    expect(refused.exitCode, refused.all).toBe(2);
    expect(refused.stderr).toContain('--tag-list: runner configuration other than name and executor configuration is reserved');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '--token', created.token, '--name', 'made-there']);
    expect(reg.exitCode, reg.all).toBe(0);
    const text = await readFile(config, 'utf8');
    expect(text).toContain(`id = ${created.id}`);
    expect(text).toMatch(/token_obtained_at = \d{4}-/);
    // GitLab Runner's zero value: the reference server's tokens do not expire here.
    expect(text).toContain('token_expires_at = 0001-01-01T00:00:00');
    const systemId = (await readFile(join(root, '.runner_system_id'), 'utf8')).trim();
    expect((await runnerOnServer(created.id))?.managers.map((m) => m.system_id)).toEqual([systemId]);

    const verify = await cli(['verify', '-c', config]);
    expect(verify.exitCode, verify.all).toBe(0);
    expect(verify.stdout).toContain('is alive');

    const unreg = await cli(['unregister', '-c', config, '--name', 'made-there']);
    expect(unreg.exitCode, unreg.all).toBe(0);
    expect(unreg.stdout).toContain('the runner stays in GitLab');
    expect(await entries(config)).toEqual([]);
    expect((await runnerOnServer(created.id))?.managers).toEqual([]);
  });

  it('takes a glrt- token given as --registration-token as an authentication token (GitLab Runner 19): verified, no legacy registration, reserved flags warned about', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const created = await createdRunner();
    const count = async (): Promise<number> => (JSON.parse((await raw(t.url, 'GET', '/admin/api/runners', { headers: admin() })).text) as unknown[]).length;
    const runnersBefore = await count();
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '--registration-token', created.token, '--name', 'via-r', '--tag-list', 'ignored', '--executor', 'shell']);
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).toContain('legacy-compatible registration');
    expect(reg.stderr).toContain('--tag-list is ignored');
    const [entry] = await entries(config);
    expect(entry).toMatchObject({ name: 'via-r', token: created.token, id: created.id });
    expect(entry!.token_obtained_at).toBeInstanceOf(Date);
    const systemId = (await readFile(join(root, '.runner_system_id'), 'utf8')).trim();
    expect((await runnerOnServer(created.id))?.managers.map((m) => m.system_id)).toEqual([systemId]);
    // No second runner was registered for it.
    expect(await count()).toBe(runnersBefore);
  });

  it('refuses a glrt- token the server does not know (exit 3) and writes nothing', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '--token', 'glrt-not-a-runner-token-000']);
    expect(reg.exitCode).toBe(3);
    expect(reg.stderr).toContain('does not know this runner token');
    expect(await readFile(config, 'utf8').catch(() => '')).toBe('');
  });

  it('writes api = "v1" when told, and registers through /ci/api/v1', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--api', 'v1']);
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stdout).toContain('API v1');
    expect((await entries(config))[0]).toMatchObject({ api: 'v1' });
  });
});

describe('reset-token', () => {
  it('writes the new token over the old one; the old one stops working', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    expect((await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'resettable'])).exitCode).toBe(0);
    const before = (await entries(config))[0]!;
    const reset = await cli(['reset-token', '-c', config, '--name', 'resettable']);
    expect(reset.exitCode, reset.all).toBe(0);
    const after = (await entries(config))[0]!;
    expect(after.token).not.toBe(before.token);
    expect(await readFile(config, 'utf8')).toMatch(/token_obtained_at = \d{4}-/);
    expect((await cli(['verify', '-c', config])).stdout).toContain('is alive');
    const old = await raw(t.url, 'POST', '/api/v4/runners/verify', { json: { token: before.token } });
    expect(old.status).toBe(403);
  });

  it('resets by --url with --id, and with a personal access token (--pat) instead of the runner token; verify selects by --url with --token', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    expect((await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'by-id'])).exitCode).toBe(0);
    expect((await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'other'])).exitCode).toBe(0);
    const [first, second] = await entries(config);
    expect(first!.id).toBeGreaterThan(0);
    const byId = await cli(['reset-token', '-c', config, '--url', t.url, '--id', String(first!.id)]);
    expect(byId.exitCode, byId.all).toBe(0);
    const afterId = (await entries(config))[0]!;
    expect(afterId.token).not.toBe(first!.token);
    expect((await entries(config))[1]!.token).toBe(second!.token);

    const badPat = await cli(['reset-token', '-c', config, '--name', 'by-id', '--pat', 'not-a-pat']);
    expect(badPat.exitCode, badPat.all).toBe(3);
    expect(badPat.stderr).toContain('refused the personal access token (403)');
    const withPat = await cli(['reset-token', '-c', config, '--name', 'by-id', '--pat', t.server.adminToken]);
    expect(withPat.exitCode, withPat.all).toBe(0);
    const afterPat = (await entries(config))[0]!;
    expect(afterPat.token).not.toBe(afterId.token);
    expect((await raw(t.url, 'POST', '/api/v4/runners/verify', { json: { token: afterId.token } })).status).toBe(403);

    const verify = await cli(['verify', '-c', config, '--url', t.url, '--token', afterPat.token]);
    expect(verify.exitCode, verify.all).toBe(0);
    expect(verify.stdout).toContain('"by-id"');
    expect(verify.stdout).not.toContain('"other"');
    const none = await cli(['verify', '-c', config, '--url', t.url, '--token', 'nobody']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('matches the filtering parameters');
  });

  it('says the v1 API has no token reset, and leaves the entry alone (exit 3)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    expect((await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--api', 'v1', '--name', 'old'])).exitCode).toBe(0);
    const before = await readFile(config, 'utf8');
    const reset = await cli(['reset-token', '-c', config, '--name', 'old']);
    expect(reset.exitCode).toBe(3);
    expect(reset.stderr).toContain('has no token reset');
    expect(await readFile(config, 'utf8')).toBe(before);
  });
});
