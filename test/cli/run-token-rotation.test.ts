/**
 * Automatic token renewal: a `run` daemon whose runner token expires (the reference server with a
 * short token expiry, as GitLab's runner token expiry) renews it at 3/4 of its life through
 * `reset_authentication_token`, writes it into its entry of config.toml in place, and keeps taking
 * jobs after the old token has expired.
 */
import { appendFile, chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../server/raw-http.js';
import { cli } from './cli.js';
import { get, metricValue, startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';

const EXPIRES_IN_MS = 8_000;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ runnerTokenExpiresInMs: EXPIRES_IN_MS });
});
afterAll(async () => {
  await t.close();
});

describe('run: runner token renewal', () => {
  it('renews an expiring token before it expires, writes it into its entry only, and keeps taking jobs with it', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    // An operator's file: a comment and a second entry whose lines must survive the rewrite.
    await writeFile(config, `# managed by hand\nconcurrent = 2\ncheck_interval = 1\nlog_format = "json"\nlisten_address = "127.0.0.1:0"\n\n[[runners]]\n  # the other one\n  name = "other"\n  url = "${t.url}"\n  token = "other-token-that-is-unknown"\n  builds_dir = "${d.builds}"\n`);
    await chmod(config, 0o600);
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'expiring', '--builds-dir', d.builds]);
    expect(reg.exitCode, reg.all).toBe(0);
    const first = parseConfig(await readFile(config, 'utf8'), config).config.runners.find((r) => r.name === 'expiring')!;
    expect(first.token_expires_at).toBeInstanceOf(Date);
    expect(first.token_obtained_at).toBeInstanceOf(Date);
    const oldToken = first.token;

    const daemon = startDaemon(config);
    try {
      const url = await daemon.statusUrl();
      await waitUntil(() => daemon.output().includes('Resetting runner authentication token... succeeded'), 30_000, 'token renewed');
      await waitUntil(async () => !(await readFile(config, 'utf8')).includes(oldToken), 10_000, 'config rewritten');
      const text = await readFile(config, 'utf8');
      expect(text.startsWith('# managed by hand\n')).toBe(true);
      expect(text).toContain('  # the other one\n  name = "other"');
      expect(text).toContain('token = "other-token-that-is-unknown"');
      const renewed = parseConfig(text, config).config.runners.find((r) => r.name === 'expiring')!;
      expect(renewed.token).not.toBe(oldToken);
      expect(renewed.token_expires_at!.getTime()).toBeGreaterThan(first.token_expires_at!.getTime());
      expect(renewed.token_obtained_at!.getTime()).toBeGreaterThanOrEqual(first.token_obtained_at!.getTime());
      // Renewed at about 3/4 of the old token's life, before it expired.
      expect(renewed.token_obtained_at!.getTime()).toBeLessThan(first.token_expires_at!.getTime());
      // The old token is dead at once.
      const old = await raw(t.url, 'POST', '/api/v4/runners/verify', { json: { token: oldToken } });
      expect(old.status).toBe(403);

      // Past the old token's expiry, jobs still come, through the new token.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, first.token_expires_at!.getTime() - Date.now() + 500)));
      const p = await t.pipeline('after-renewal:\n  script:\n    - echo renewed\n');
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 30_000);
      const metrics = (await get(`${url}/metrics`)).text;
      expect(metricValue(metrics, 'gitlab_runner_configuration_saved_total')).toBeGreaterThanOrEqual(1);
      expect(metricValue(metrics, 'gitlab_runner_api_request_statuses_total', { endpoint: 'reset_token', status: '201', method: 'post' })).toBeGreaterThanOrEqual(1);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });

  it('does not renew a token whose entry sets FF_DISABLE_AUTOMATIC_TOKEN_ROTATION, and says it is about to expire', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'kept', '--builds-dir', d.builds]);
    expect(reg.exitCode, reg.all).toBe(0);
    await appendFile(config, '  [runners.feature_flags]\n    FF_DISABLE_AUTOMATIC_TOKEN_ROTATION = true\n');
    const before = await readFile(config, 'utf8');
    const entry = parseConfig(before, config).config.runners[0]!;
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('Automatic token rotation is disabled for runner: '), 30_000, 'warning');
      expect(daemon.output()).toContain(`Automatic token rotation is disabled for runner: ${entry.token.replace(/^glrt-/, '').slice(0, 9)}`);
      expect(daemon.output()).not.toContain('Resetting runner authentication token');
      expect(await readFile(config, 'utf8')).toBe(before);
      // The token still works until it expires: nothing reset it.
      expect((await raw(t.url, 'POST', '/api/v4/runners/verify', { json: { token: entry.token } })).status).toBe(200);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });
});
