/**
 * How often `run` asks for jobs, against a coordinator that answers at once (GitLab 8.x does not long
 * poll): each entry about once per check_interval whatever the others do, refused entries backing off.
 * A counting HTTP server on 127.0.0.1 stands in for the coordinator, so the count is exact.
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

let server: Server;
let url: string;
/** Job requests per runner token. */
const requests = new Map<string, number>();
const refused = new Set<string>();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.startsWith('/ci/api/v1/builds/register')) {
        const token = new URLSearchParams(body).get('token') ?? (JSON.parse(body || '{}') as { token?: string }).token ?? '';
        requests.set(token, (requests.get(token) ?? 0) + 1);
        res.writeHead(refused.has(token) ? 403 : 404, { 'content-type': 'application/json' }).end('{"message":"404 Not Found"}');
        return;
      }
      res.writeHead(404).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => {
  server.close();
});

async function daemonFor(tokens: string[], seconds: number, during?: (pid: number) => Promise<void>): Promise<Map<string, number>> {
  const d = await workDirs();
  const config = join(d.root, 'config.toml');
  const entries = tokens.map((token, i) => `[[runners]]\n  name = "r${i}"\n  url = "${url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n`);
  await writeFile(config, `concurrent = 4\ncheck_interval = 1\nlog_format = "json"\n\n${entries.join('\n')}`);
  const child = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
  // Signals are handled once the daemon polls; on a loaded machine start-up can take seconds.
  await waitUntil(() => tokens.some((t) => (requests.get(t) ?? 0) > 0), 30_000, 'first job request');
  const started = Date.now();
  if (during && child.pid !== undefined) await during(child.pid);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds * 1000 - (Date.now() - started))));
  child.kill('SIGTERM');
  const result = await child;
  expect(result.exitCode, result.all).toBe(0);
  return new Map(tokens.map((t) => [t, requests.get(t) ?? 0]));
}

describe('job request rate of run', () => {
  it('polls each of several entries about once per check_interval, not once per other entry\'s poll', async () => {
    const tokens = ['rate-a', 'rate-b', 'rate-c'];
    const counts = await daemonFor(tokens, 6);
    // 6 s at check_interval = 1 s (±20 % jitter, plus start-up): about 6 each. The storm was thousands.
    for (const token of tokens) {
      expect(counts.get(token)).toBeGreaterThanOrEqual(2);
      expect(counts.get(token)).toBeLessThanOrEqual(12);
    }
  });

  it('backs off refused entries even while other entries poll and the config is reloaded', async () => {
    const tokens = ['refused-a', 'refused-b', 'healthy'];
    refused.add('refused-a');
    refused.add('refused-b');
    const counts = await daemonFor(tokens, 8, async (pid) => {
      // Reloads of an unchanged file neither forgive a refusal nor end a pause early.
      for (let i = 0; i < 4; i++) {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        process.kill(pid, 'SIGHUP');
      }
    });
    // Backoff from 1 s doubling: about 4 requests in 8 s. Without it: one a second or far more.
    expect(counts.get('refused-a')).toBeLessThanOrEqual(6);
    expect(counts.get('refused-b')).toBeLessThanOrEqual(6);
    expect(counts.get('healthy')).toBeLessThanOrEqual(16);
  });
});

describe('a check_interval past Node\'s timer limit', () => {
  it('polls once and then waits, rather than polling continuously', async () => {
    requests.clear();
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, `check_interval = ${30 * 86_400}\nlog_format = "json"\n\n[[runners]]\n  url = "${url}"\n  token = "monthly"\n  builds_dir = "${d.builds}"\n`);
    const child = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    await waitUntil(() => (requests.get('monthly') ?? 0) > 0, 30_000, 'first job request');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    child.kill('SIGTERM');
    const result = await child;
    expect(result.exitCode, result.all).toBe(0);
    expect(requests.get('monthly')).toBe(1);
  });
});
