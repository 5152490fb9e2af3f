/**
 * What a `run` daemon loads stays loaded for its lifetime (ES modules are never unloaded), so the
 * daemon must not load the heavy libraries it can do without, not even for a job or a reload
 * (bench/idle.ts measures the RSS this keeps down). Every module load of a real daemon is recorded
 * by a loader hook and a require hook.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const HOOKS = `
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.LOADED_LOG, url + '\\n');
  return next(url, context);
}`;
const REGISTER = (hooks: string): string => `import { register } from 'node:module';\nregister(${JSON.stringify(hooks)});\n`;
const REQUIRE = `
const Module = require('node:module');
const { appendFileSync } = require('node:fs');
const load = Module._load;
Module._load = function (request, parent, isMain) {
  try { appendFileSync(process.env.LOADED_LOG, Module._resolveFilename(request, parent, isMain) + '\\n'); } catch {}
  return load.apply(this, arguments);
};`;

describe('run: what the daemon loads', () => {
  it('never loads yargs, undici, @opentelemetry/api, execa or pino: not at start, not for a job with artifacts and a cache, not on a reload', async () => {
    const d = await workDirs();
    const hooks = join(d.root, 'hooks.mjs');
    await writeFile(hooks, HOOKS);
    await writeFile(join(d.root, 'register.mjs'), REGISTER(pathToFileURL(hooks).href));
    await writeFile(join(d.root, 'require.cjs'), REQUIRE);
    const log = join(d.root, 'loaded.txt');
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `check_interval = 1\nlog_level = "info"\nlisten_address = "127.0.0.1:0"\n[[runners]]\n  name = "lean"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n  cache_dir = "${d.cache}"\n`);
    const args = ['--require', join(d.root, 'require.cjs'), '--import', pathToFileURL(join(d.root, 'register.mjs')).href, CLI, 'run', '-c', config];
    const child = execa('node', args, { reject: false, all: true, stdin: 'ignore', env: { LOADED_LOG: log } });
    let output = '';
    child.all?.on('data', (c: Buffer) => (output += c.toString()));
    try {
      await waitUntil(() => output.includes('watching the config file'), 30_000, 'daemon started');
      // A job that uses what a job can: untracked artifacts (git ls-files) and a cache.
      const p = await t.pipeline('build:\n  script:\n    - echo hi > out.txt\n  artifacts:\n    untracked: true\n  cache:\n    key: k\n    paths:\n      - out.txt\n');
      await t.waitForJob(p.jobs[0]!.id, (v) => v.status === 'success', 30_000);
      child.kill('SIGHUP');
      await waitUntil(() => output.includes('SIGHUP: config reloaded'), 30_000, 'reloaded');
    } finally {
      child.kill('SIGTERM');
      await child;
    }
    const loaded = (await readFile(log, 'utf8')).split('\n');
    // The hooks see the daemon's own modules (a check that they work at all).
    expect(loaded.some((line) => line.includes('/dist/agent/job/run-job.js'))).toBe(true);
    expect(loaded.some((line) => line.includes('/dist/client/http.js'))).toBe(true);
    expect(loaded.some((line) => line.includes('/node_modules/smol-toml/'))).toBe(true);
    expect(loaded.some((line) => line.includes('/dist/artifacts/select.js'))).toBe(true);
    // zod is the config's ([runners.kubernetes] is checked with it), and no longer counted here.
    const heavy = loaded.filter((line) => /\/node_modules\/(yargs[^/]*|cliui|undici|@opentelemetry|execa|pino[^/]*|@kubernetes)\//.test(line));
    expect(heavy).toEqual([]);
  });
});
