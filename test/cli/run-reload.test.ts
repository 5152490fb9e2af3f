import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { get, metricValue, startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface Ready {
  ready: boolean;
  runners: Array<{ runner: string; ready: boolean; reason?: string }>;
}

const readyRunners = async (url: string): Promise<string[]> =>
  (await get(`${url}/readyz`)).json<Ready>().runners.filter((r) => r.ready).map((r) => r.runner).sort();

describe('run: reload when config.toml changes', () => {
  it('applies edits in place and by rename, keeps the old config on a broken or deleted file, and picks up `register`', async () => {
    const d = await workDirs();
    const a = await t.registerRunner();
    const b = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const entry = (name: string, token: string): string => `[[runners]]\n  name = "${name}"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n`;
    const globals = (extra: string): string => `check_interval = 1\nlog_format = "json"\n${extra}\n`;
    await writeFile(config, globals('concurrent = 1\nlisten_address = "127.0.0.1:0"') + entry('first', a.token));
    const daemon = startDaemon(config);
    try {
      let url = await daemon.statusUrl();
      await waitUntil(async () => (await readyRunners(url)).join() === 'first', 30_000, 'first ready');
      await waitUntil(() => daemon.output().includes('watching the config file'), 30_000, 'watching');

      // 1. Written in place: a second entry, concurrent and log_level.
      await writeFile(config, globals('concurrent = 2\nlog_level = "debug"\nlisten_address = "127.0.0.1:0"') + entry('first', a.token) + entry('second', b.token));
      await waitUntil(async () => (await readyRunners(url)).join() === 'first,second', 30_000, 'second polls');
      expect(metricValue((await get(`${url}/metrics`)).text, 'gitlab_runner_concurrent')).toBe(2);
      expect(daemon.output()).toContain('file change: config reloaded');
      const p = await t.pipeline('j:\n  script:\n    - echo hi\n');
      await t.waitForJob(p.jobs[0]!.id, (v) => v.status === 'success', 30_000);
      expect(daemon.output()).toMatch(/"level":"debug",[^\n]*"msg":"dirs ready"/); // log_level = debug applied

      // 2. Replaced by rename (as editors and `register` do): the status server moves.
      const temp = join(d.root, 'config.toml.new');
      await writeFile(temp, globals('concurrent = 2\nlisten_address = "127.0.0.2:0"') + entry('second', b.token));
      await rename(temp, config);
      const moved = await daemon.statusUrl(1);
      expect(moved).toMatch(/^http:\/\/127\.0\.0\.2:/);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
      url = moved;
      await waitUntil(async () => (await get(`${url}/readyz`)).json<Ready>().runners.map((r) => r.runner).join() === 'second', 30_000, 'first removed');

      // 3. A broken file: logged with its line, counted, the old config kept.
      await writeFile(config, globals('concurrent = 2\nlisten_address = "127.0.0.2:0"\nconcurrent = "x"') + entry('second', b.token));
      await waitUntil(() => daemon.output().includes('keeping the old one'), 30_000, 'broken file refused');
      expect(daemon.output()).toMatch(/config\.toml:\d+/);
      const metrics = (await get(`${url}/metrics`)).text;
      expect(metricValue(metrics, 'gitlab_runner_configuration_loading_error_total')).toBe(1);
      // The load at start, then two reloads.
      expect(metricValue(metrics, 'gitlab_runner_configuration_loaded_total')).toBe(3);
      expect(metricValue(metrics, 'ci_runner_config_last_reload_timestamp_seconds')).toBeGreaterThan(0);
      expect(await readyRunners(url)).toEqual(['second']);

      // 4. Deleted: a warning, the old config kept.
      await rm(config);
      await waitUntil(() => daemon.output().includes('the config file was deleted'), 30_000, 'deletion noticed');
      expect(await readyRunners(url)).toEqual(['second']);
      expect(daemon.child.exitCode).toBeNull();

      // 5. Back again, then `register` adds a runner next to the running daemon: it polls.
      await writeFile(config, globals('concurrent = 2\nlisten_address = "127.0.0.2:0"') + entry('second', b.token));
      await waitUntil(async () => metricValue((await get(`${url}/metrics`)).text, 'gitlab_runner_configuration_loaded_total') === 4, 30_000, 'file back');
      const reg = await cli(['register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--name', 'third', '--builds-dir', d.builds]);
      expect(reg.exitCode, reg.all).toBe(0);
      expect(reg.stdout).toContain('picks it up within seconds');
      await waitUntil(async () => (await readyRunners(url)).join() === 'second,third', 30_000, 'registered runner polls');
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });

  it('lets the running job of an entry removed from the file finish, and takes no new job for it', async () => {
    const d = await workDirs();
    const a = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    const head = 'check_interval = 1\nlog_format = "json"\n';
    await writeFile(config, `${head}[[runners]]\n  name = "leaving"\n  url = "${t.url}"\n  token = "${a.token}"\n  builds_dir = "${d.builds}"\n`);
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('watching the config file'), 30_000, 'watching');
      const p = await t.pipeline('long:\n  script:\n    - echo started\n    - sleep 3\n    - echo done-after-removal\n');
      const id = p.jobs[0]!.id;
      await waitUntil(async () => (await t.server.getTrace(id)).toString().includes('started'), 30_000, 'job started');
      await writeFile(config, head);
      await waitUntil(() => daemon.output().includes('file change: config reloaded'), 30_000, 'reloaded');
      const next = await t.pipeline('next:\n  script:\n    - echo never\n');
      await t.waitForJob(id, (v) => v.status === 'success', 30_000);
      expect((await t.server.getTrace(id)).toString()).toContain('done-after-removal');
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(t.server.getJob(next.jobs[0]!.id)?.status).toBe('pending');
      t.server.cancelJob(next.jobs[0]!.id);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });

  it('applies a new log_format on reload', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, 'log_format = "json"\n');
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => daemon.output().includes('watching the config file'), 30_000, 'watching');
      await writeFile(config, 'log_format = "text"\n');
      await waitUntil(() => /INFO[^\n]*file change: config reloaded/.test(daemon.output()), 30_000, 'pretty log line');
      expect(daemon.output()).not.toMatch(/^\{[^\n]*file change: config reloaded/m);
    } finally {
      expect(await daemon.stop(), daemon.output()).toBe(0);
    }
  });
});
