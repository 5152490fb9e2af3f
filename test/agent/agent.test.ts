import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { configSchema } from '../../src/agent/config/schema.js';
import type { RunnerConfig } from '../../src/agent/config/schema.js';
import { createExecutor, defaultServices } from '../../src/agent/services.js';
import { fakeDockerCli } from '../helpers/fake-docker-cli.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitUntil, workDirs } from '../cli/helpers.js';

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
  return { logger: createLogger({ level: 'debug', format: 'json', destination: sink }), lines };
}

/** DOCKER_HOST of each `version` call of the fake CLI. */
async function calls(dir: string): Promise<string[]> {
  return (await readFile(join(dir, 'calls'), 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
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

  it('keeps a docker entry whose engine does not answer from taking jobs, re-checks it, and polls once it works', async () => {
    const d = await workDirs();
    const cli = await fakeDockerCli(d.root);
    const { token } = await t.registerRunner();
    const p = await t.pipeline('j:\n  script:\n    - echo ran\n');
    const config = configSchema.parse({
      concurrent: 1,
      check_interval: 0.1,
      runners: [{ name: 'docker-gate', url: t.url, token, executor: 'docker', builds_dir: d.builds, cache_dir: d.cache, docker: { cli, host: 'tcp://127.0.0.1:1' } }],
    });
    const { logger, lines } = captureLogger();
    // The job itself runs in the shell executor: this test is about the gate, not about docker.
    const services = { ...defaultServices(logger), createExecutor: (runner: RunnerConfig) => createExecutor({ ...runner, executor: 'shell' }) };
    const agent = new Agent(config, services, {}, { executorRecheckMs: 200 });
    agent.start();
    try {
      await waitUntil(async () => (await calls(d.root)).length >= 3, 30_000, 'three checks');
      expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('pending');
      const refusals = lines.filter((l) => String(l.msg).startsWith('runner "docker-gate" takes no jobs'));
      // Said once with the engine's own words, not once per check.
      expect(refusals).toHaveLength(1);
      expect(String(refusals[0]!.msg)).toContain('Cannot connect to the Docker daemon');
      expect(new Set(await calls(d.root))).toEqual(new Set(['tcp://127.0.0.1:1']));
      await writeFile(join(d.root, 'engine-up'), '');
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 60_000);
      expect(lines.some((l) => String(l.msg).includes('the docker executor works now; taking jobs'))).toBe(true);
    } finally {
      agent.shutdown();
      await agent.done();
    }
  });

  it('checks a waiting docker entry again at once on reload', async () => {
    const d = await workDirs();
    const cli = await fakeDockerCli(d.root);
    const { token } = await t.registerRunner();
    const p = await t.pipeline('j:\n  script:\n    - echo ran\n');
    const config = configSchema.parse({
      concurrent: 1,
      check_interval: 0.1,
      runners: [{ name: 'docker-reload', url: t.url, token, executor: 'docker', builds_dir: d.builds, cache_dir: d.cache, docker: { cli } }],
    });
    const { logger, lines } = captureLogger();
    const services = { ...defaultServices(logger), createExecutor: (runner: RunnerConfig) => createExecutor({ ...runner, executor: 'shell' }) };
    // Far beyond the test's deadline: only the reload can make it check again in time.
    const agent = new Agent(config, services, {}, { executorRecheckMs: 3_600_000 });
    agent.start();
    try {
      await waitUntil(() => lines.some((l) => String(l.msg).startsWith('runner "docker-reload" takes no jobs')), 30_000, 'refusal logged');
      await writeFile(join(d.root, 'engine-up'), '');
      agent.reload(config);
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 60_000);
    } finally {
      agent.shutdown();
      await agent.done();
    }
  });

  it('keeps running with no runner entries until shut down', async () => {
    const config = configSchema.parse({ concurrent: 1, runners: [] });
    const { logger, lines } = captureLogger();
    const agent = new Agent(config, defaultServices(logger));
    agent.start();
    let finished = false;
    const done = agent.done().then(() => (finished = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(finished).toBe(false);
    expect(lines.some((l) => l.level === 'warn' && String(l.msg).includes('no [[runners]]'))).toBe(true);
    agent.shutdown();
    await done;
    expect(finished).toBe(true);
  });
});

describe('reload', () => {
  it('adds poll loops when request_concurrency is raised and ends the surplus when it is lowered', async () => {
    const { token } = await t.registerRunner();
    const d = await workDirs();
    const configWith = (requestConcurrency: number) =>
      configSchema.parse({ concurrent: 5, check_interval: 0.05, runners: [{ name: 'rc', url: t.url, token, builds_dir: d.builds, request_concurrency: requestConcurrency }] });
    // Each job request takes 300 ms, so the loops' requests overlap and can be counted in flight.
    const fault = t.server.faults.add({ endpoint: 'request_build', action: 'delay', delayMs: 300 });
    let inFlight = 0;
    let most = 0;
    let answered = 0;
    const { logger } = captureLogger();
    const agent = new Agent(configWith(1), defaultServices(logger), {}, {
      wrapClient: (client) =>
        new Proxy(client, {
          get(target, key, receiver) {
            const value: unknown = Reflect.get(target, key, receiver);
            if (key !== 'requestBuild' || typeof value !== 'function') return value;
            return async (...args: unknown[]) => {
              inFlight += 1;
              most = Math.max(most, inFlight);
              try {
                return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
              } finally {
                inFlight -= 1;
                answered += 1;
              }
            };
          },
        }),
    });
    // Three more requests answered: with one loop they came one after another.
    const threeMore = async (what: string) => {
      const from = answered;
      await waitUntil(() => answered >= from + 3, 30_000, what);
    };
    agent.start();
    try {
      await threeMore('three requests of one loop');
      expect(most).toBe(1);
      agent.reload(configWith(3));
      await waitUntil(() => most === 3, 30_000, 'three requests in flight');
      agent.reload(configWith(1));
      // The surplus loops finish the request they hold, then end.
      await waitUntil(() => inFlight <= 1, 30_000, 'the surplus requests answered');
      most = inFlight;
      await threeMore('three requests after lowering it');
      expect(most).toBe(1);
    } finally {
      agent.shutdown();
      await agent.done();
      t.server.faults.remove(fault);
    }
  });
});
