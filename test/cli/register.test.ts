import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('register, list, verify, unregister', () => {
  it('round-trips a runner through the coordinator and config.toml', async () => {
    const { root } = await workDirs();
    const config = join(root, 'etc', 'config.toml');
    const reg = await cli(['register', '-c', config, '--non-interactive', '--url', t.url, '--registration-token', t.server.registrationToken, '--name', 'box-1', '--tag-list', 'linux, fast', '--limit', '2']);
    expect(reg.exitCode, reg.all).toBe(0);
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    const parsed = parseConfig(await readFile(config, 'utf8'), config).config;
    expect(parsed.runners).toHaveLength(1);
    expect(parsed.runners[0]).toMatchObject({ name: 'box-1', url: t.url, executor: 'shell', limit: 2 });

    // a second one from environment variables only
    const reg2 = await cli(['register', '--non-interactive'], {
      env: { CONFIG_FILE: config, CI_SERVER_URL: t.url, REGISTRATION_TOKEN: t.server.registrationToken, RUNNER_NAME: 'box-2' },
    });
    expect(reg2.exitCode, reg2.all).toBe(0);

    const list = await cli(['list', '-c', config]);
    expect(list.exitCode).toBe(0);
    expect(list.all).toMatch(/box-1 .*Executor=shell/);
    expect(list.all).toMatch(/box-2 /);

    const verify = await cli(['verify', '-c', config]);
    expect(verify.exitCode, verify.all).toBe(0);
    expect(verify.all?.match(/is alive/g)).toHaveLength(2);

    const unreg = await cli(['unregister', '-c', config, '--name', 'box-1']);
    expect(unreg.exitCode, unreg.all).toBe(0);
    const after = parseConfig(await readFile(config, 'utf8'), config).config;
    expect(after.runners.map((r) => r.name)).toEqual(['box-2']);
    // the coordinator no longer knows box-1's token
    const runner1 = parsed.runners[0]!;
    const poll = await cli(['run-once', '--url', t.url, '--token', runner1.token, '--wait-timeout', '1s']);
    expect(poll.exitCode).toBe(3);
  });

  it('verify --delete drops runners the coordinator no longer knows', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    for (const name of ['keep', 'gone']) {
      const r = await cli(['register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--name', name]);
      expect(r.exitCode, r.all).toBe(0);
    }
    const gone = parseConfig(await readFile(config, 'utf8'), config).config.runners.find((r) => r.name === 'gone')!;
    // delete it on the server behind the config's back
    const del = await cli(['unregister', '-c', join(root, 'other.toml'), '--url', t.url, '--token', gone.token]);
    expect(del.exitCode, del.all).toBe(0);

    const check = await cli(['verify', '-c', config]);
    expect(check.exitCode).toBe(3);
    expect(check.all).toMatch(/"gone".*is removed/);
    const fix = await cli(['verify', '-c', config, '--delete']);
    expect(fix.exitCode, fix.all).toBe(0);
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners.map((r) => r.name)).toEqual(['keep']);

    const all = await cli(['unregister', '-c', config, '--all-runners']);
    expect(all.exitCode, all.all).toBe(0);
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners).toEqual([]);
  });

  it('exits 3 with a clear message when the registration token is wrong', async () => {
    const { root } = await workDirs();
    const r = await cli(['register', '-c', join(root, 'c.toml'), '--non-interactive', '--url', t.url, '-r', 'wrong-token']);
    expect(r.exitCode).toBe(3);
    expect(r.all).toContain('refused the registration token');
  });

  it('exits 2 and names what is missing without a URL', async () => {
    const { root } = await workDirs();
    const r = await cli(['register', '-c', join(root, 'c.toml'), '--non-interactive', '-r', 'x']);
    expect(r.exitCode).toBe(2);
    expect(r.all).toContain('CI_SERVER_URL');
  });

  it('refuses a config with a bad value, naming file and line (exit 2)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    await writeFile(config, `concurrent = 1\n\n[[runners]]\n  name = "x"\n  url = "${t.url}"\n  token = "abcdefgh"\n  shell = "fish"\n`);
    const r = await cli(['run', '-c', config]);
    expect(r.exitCode).toBe(2);
    expect(r.all).toContain(`${config}:7: \`runners.shell\``);
    const l = await cli(['list', '-c', config]);
    expect(l.exitCode).toBe(2);
  });

  it('says how to create a config when there is none', async () => {
    const { root } = await workDirs();
    const r = await cli(['run', '-c', join(root, 'missing.toml')]);
    expect(r.exitCode).toBe(2);
    expect(r.all).toContain('ci-runner register');
  });
});
