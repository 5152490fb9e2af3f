import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { configSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

async function agentFor(token: string, global: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const d = await workDirs();
  const config = configSchema.parse({ concurrent: 1, check_interval: 0.1, ...global, runners: [{ name: 'agent-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, ...extra }] });
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, defaultServices(logger));
  return { agent, lines };
}

describe('poll loop', () => {
  it('backs off after 5xx answers to job requests and recovers when the server does', async () => {
    const { token } = await t.registerRunner();
    const fault = t.server.faults.add({ endpoint: 'request_build', action: 'error', status: 502, count: 3 });
    const p = await t.pipeline('j:\n  script:\n    - echo ok\n');
    const { agent, lines } = await agentFor(token);
    agent.start();
    try {
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 60_000);
    } finally {
      agent.shutdown();
      await agent.done();
      t.server.faults.remove(fault);
    }
    const failures = lines.filter((l) => l.msg === 'job request failed; backing off');
    expect(failures.map((l) => l.status)).toEqual([502, 502, 502]);
    expect(failures.map((l) => l.failures)).toEqual([1, 2, 3]);
  });

  it('drains a queue without waiting for the next tick after each job', async () => {
    const { token } = await t.registerRunner();
    const p = await t.pipeline([1, 2, 3].map((n) => `j${n}:\n  script:\n    - echo ${n}\n`).join(''));
    // A check interval far beyond the test's deadline: only immediate re-polls can finish in time.
    const { agent } = await agentFor(token, { check_interval: 3600 });
    agent.start();
    try {
      for (const job of p.jobs) await t.waitForJob(job.id, (j) => j.status === 'success', 60_000);
    } finally {
      agent.shutdown();
      await agent.done();
    }
  });
});
