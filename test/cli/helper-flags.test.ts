/**
 * GitLab Runner's flags that ci-runner's own commands take as GitLab Runner does: the helper's
 * `artifacts-uploader --response-header-timeout` bounds the wait for the coordinator's answer (a
 * coordinator that never answers is a server no real one can be made into on demand: a bare socket
 * here), and the global `--cpuprofile` is accepted with one warning saying why it does nothing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let silent: Server;
let url: string;
let mute: Server;
let muteUrl: string;
beforeAll(async () => {
  // Answers nothing at all, the API probe included.
  mute = createServer((req) => void req.resume());
  await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
  muteUrl = `http://127.0.0.1:${(mute.address() as AddressInfo).port}`;
  // Answers the API probe (v4 is there), reads each upload whole, then never answers it.
  silent = createServer((req, res) => {
    req.resume();
    if (req.url === '/api/v4/runners/verify') res.writeHead(403).end();
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(async () => {
  mute.closeAllConnections();
  await new Promise((resolve) => mute.close(resolve));
  silent.closeAllConnections();
  await new Promise((resolve) => silent.close(resolve));
});

describe('GitLab Runner flags of our commands', () => {
  it('artifacts-uploader gives up on a coordinator that sends no answer within --response-header-timeout, not --timeout', async () => {
    const { root } = await workDirs();
    await writeFile(join(root, 'a.txt'), 'artifact');
    const started = Date.now();
    const result = await cli(['artifacts-uploader', '--url', url, '--token', 'job-token', '--id', '1', '--path', 'a.txt', '--timeout', '10m0s', '--response-header-timeout', '1s'], { cwd: root });
    expect(result.exitCode, result.all).not.toBe(0);
    expect(result.stderr).not.toContain('is ignored');
    // Three attempts of 1 s each and their pauses, far below the 10 minutes of --timeout.
    expect(Date.now() - started).toBeLessThan(120_000);
  }, 150_000);

  it('artifacts-uploader waits no longer than --response-header-timeout for the API probe either', async () => {
    const { root } = await workDirs();
    await writeFile(join(root, 'a.txt'), 'artifact');
    const result = await cli(['artifacts-uploader', '--url', muteUrl, '--token', 'job-token', '--id', '1', '--path', 'a.txt', '--response-header-timeout', '1s'], { cwd: root });
    expect(result.exitCode, result.all).not.toBe(0);
    expect(result.all).toMatch(/within 1 s/);
  }, 150_000);

  it('--cpuprofile (CPU_PROFILE) is accepted before the command, with one warning', async () => {
    const { root } = await workDirs();
    const result = await cli(['--cpuprofile', join(root, 'cpu.prof'), 'list', '-c', join(root, 'none.toml')]);
    expect(result.stderr.match(/WARNING: --cpuprofile is ignored: ci-runner writes no Go \(pprof\) CPU profile/g)).toHaveLength(1);
    expect(result.stderr).not.toContain('unknown command');
  });
});
