/**
 * GitLab Runner 19's global and `[[runners]]` keys that change what a runner does, each against the
 * reference server (or a recording coordinator where what the runner sends is the point): log_level's
 * spellings, shell values, labels, strict_check_interval, the unhealthy pause, the stage timeouts,
 * debug_trace_disabled, [runners.artifact] and job_status_final_update_retry_limit.
 */
import { logText } from '../helpers/log-text.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { configSchema, parseConfig, runnerSchema } from '../../src/agent/config/index.js';
import { defaultServices } from '../../src/agent/services.js';
import { createLogger, silentLogger } from '../../src/log/index.js';
import { waitUntil, workDirs } from '../cli/helpers.js';
import { runOnce } from '../helpers/run-once.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { configFailure, configHead } from './config-text.js';

let t: TestServer;
let token: string;
useTestServer(
  (server, runnerToken) => {
    t = server;
    token = runnerToken;
  },
  { files: { 'README.md': '# p\n' } },
);

/** Queues `yaml`, runs its one job in-process on a shell runner with `runner`'s keys. */
async function runJob(yaml: string, runner: Record<string, unknown> = {}, variables?: Record<string, string>) {
  const d = await workDirs();
  const p = await t.pipeline(yaml, variables);
  const config = runnerSchema.parse({ name: 'keys-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...runner });
  const never = new AbortController().signal;
  await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const job = t.server.getJob(p.jobs[0]!.id);
  return { status: job?.status, failureReason: job?.failure_reason, trace: logText(await t.server.getTrace(p.jobs[0]!.id)) };
}

/** A logger whose JSON lines are kept. */
function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', format: 'json', destination }), lines };
}

/** A coordinator that answers every job request with `status` and keeps each request's body. */
async function recordingCoordinator(status: number) {
  const requests: Array<Record<string, unknown>> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/api/v4/jobs/request') requests.push(JSON.parse(body || '{}') as Record<string, unknown>);
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 204 ? undefined : '{"message":"403 Forbidden"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** An agent with one v4 entry at `url`; stopped when `body` resolves. */
async function withAgent(url: string, global: Record<string, unknown>, entry: Record<string, unknown>, body: (lines: Array<Record<string, unknown>>) => Promise<void>) {
  const d = await workDirs();
  const config = configSchema.parse({ concurrent: 1, check_interval: 0.1, ...global, runners: [{ name: 'recorded', url, token: 'glrt-recorded-token', api: 'v4', builds_dir: d.builds, cache_dir: d.cache, ...entry }] });
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, defaultServices(logger));
  agent.start();
  try {
    await body(lines);
  } finally {
    agent.shutdown();
    await agent.done();
  }
}

describe('global keys', () => {
  it('reads log_level as GitLab Runner does: "warning" and any case', () => {
    expect(parseConfig('log_level = "warning"\n', 'c.toml').config.log_level).toBe('warn');
    expect(parseConfig('log_level = "DEBUG"\n', 'c.toml').config.log_level).toBe('debug');
    expect(() => parseConfig('log_level = "loud"\n', 'c.toml')).toThrow(/c\.toml:1: `log_level`: one of panic, fatal, error, warning, info, debug, trace/);
  });

  it('reads connection_max_age as a duration, 15 minutes by default', () => {
    expect(parseConfig('connection_max_age = "1m30s"\n', 'c.toml').config.connection_max_age).toBe(90);
    expect(parseConfig('', 'c.toml').config.connection_max_age).toBe(900);
    expect(() => parseConfig('connection_max_age = "soon"\n', 'c.toml')).toThrow(/`connection_max_age`: a duration such as "30s"/);
  });
});

describe('[[runners]] values', () => {
  it('refuses PowerShell, naming why, and reads an empty shell as bash', () => {
    expect(configFailure(configHead('shell').replace('executor = "shell"', 'executor = "shell"\n  shell = "pwsh"'))).toContain('`runners.shell`: "pwsh" is refused: ci-runner writes job scripts for bash and sh only, not PowerShell');
    expect(parseConfig(configHead('shell').replace('executor = "shell"', 'executor = "shell"\n  shell = ""'), 'c.toml').config.runners[0]!.shell).toBe('bash');
  });

  it('merges the global labels under an entry\'s own, checks them by GitLab\'s rules, and allows at most 32', () => {
    const text = `labels = { team = "platform", tier = "shared" }\n${configHead('shell')}  [runners.labels]\n    tier = "dedicated"\n`;
    expect(parseConfig(text, 'c.toml').config.runners[0]!.labels).toEqual({ team: 'platform', tier: 'dedicated' });
    expect(configFailure(`labels = { "x" = "y" }\n${configHead('shell')}`)).toMatch(/`labels\.x`: a label name of 3 to 65/);
    expect(configFailure(`labels = { team = "has space" }\n${configHead('shell')}`)).toMatch(/`labels\.team`: a label value of 1 to 256/);
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`global${i}`, 'x']));
    const own = Array.from({ length: 13 }, (_, i) => `    own${i} = "y"`).join('\n');
    const tooMany = `labels = ${JSON.stringify(many).replace(/"(\w+)":/g, '$1 = ')}\n${configHead('shell')}  [runners.labels]\n${own}\n`;
    expect(configFailure(tooMany)).toMatch(/c\.toml:\d+: `runners\.labels`: runner "box" has 33 labels with the global ones; at most 32 are allowed/);
  });
});

describe('what the runner tells GitLab', () => {
  it('sends the merged labels and the docker gpus in info, as GitLab Runner does', async () => {
    const coordinator = await recordingCoordinator(204);
    try {
      await withAgent(coordinator.url, { labels: { team: 'platform' } }, { executor: 'docker', labels: { zone: 'eu-1' }, docker: { image: 'alpine', gpus: 'all' } }, async () => {
        await waitUntil(() => coordinator.requests.length > 0, 30_000, 'a job request');
      });
      const info = coordinator.requests[0]!.info as Record<string, unknown>;
      expect(info.labels).toEqual({ team: 'platform', zone: 'eu-1' });
      expect(info.config).toEqual({ gpus: 'all' });
    } finally {
      await coordinator.close();
    }
  }, 60_000);
});

describe('the unhealthy pause', () => {
  it('stops asking for jobs after unhealthy_requests_limit refusals, for unhealthy_interval, then forces one check', async () => {
    const coordinator = await recordingCoordinator(403);
    try {
      await withAgent(coordinator.url, {}, { unhealthy_requests_limit: 2, unhealthy_interval: '2s' }, async (lines) => {
        await waitUntil(() => lines.some((l) => String(l.msg).includes(`Runner "${coordinator.url}recorded-" is unhealthy and will be disabled for 2s seconds!`)), 30_000, 'the unhealthy line');
        const paused = coordinator.requests.length;
        expect(paused).toBe(2);
        // check_interval is 0.1 s: without the pause about ten more requests would come in a second.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(coordinator.requests.length).toBe(paused);
        await waitUntil(() => lines.some((l) => String(l.msg).includes(`Runner "${coordinator.url}recorded-" is not healthy, but check for a new job will be forced!`)), 30_000, 'the forced check');
        await waitUntil(() => coordinator.requests.length > paused, 30_000, 'the forced request');
      });
    } finally {
      await coordinator.close();
    }
  }, 60_000);
});

describe('strict_check_interval', () => {
  it('waits check_interval after receiving a job instead of asking again at once', async () => {
    // A server of its own: the job left pending must not reach the other tests' runners.
    const t = await startTestServer({ files: { 'README.md': '# p\n' } });
    const { token } = await t.registerRunner();
    const d = await workDirs();
    const p = await t.pipeline('a:\n  script:\n    - echo a\nb:\n  script:\n    - echo b\n');
    const config = configSchema.parse({ concurrent: 2, check_interval: 3600, runners: [{ name: 'strict', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, strict_check_interval: true }] });
    const agent = new Agent(config, defaultServices(silentLogger()));
    agent.start();
    try {
      await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success', 60_000);
      // With check_interval an hour, the second job is not asked for again within the test.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(t.server.getJob(p.jobs[1]!.id)?.status).toBe('pending');
    } finally {
      agent.shutdown();
      await agent.done();
      await t.close();
    }
  }, 90_000);
});

describe('stage timeouts and debug_trace_disabled', () => {
  it('fails a job whose get_sources outlasts get_sources_timeout, as timed out, with GitLab Runner\'s words', async () => {
    const { status, failureReason, trace } = await runJob('j:\n  script:\n    - echo never\n', { pre_clone_script: 'sleep 30', get_sources_timeout: '1s' });
    expect(status).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: get sources timeout: exceeded timeout of 1s');
    expect(failureReason).toBe('job_execution_timeout');
    expect(trace).not.toContain('$ echo never');
  }, 60_000);

  it('refuses CI_DEBUG_TRACE with GitLab Runner\'s warning when debug_trace_disabled is set', async () => {
    const { status, trace } = await runJob('j:\n  script:\n    - echo "value is $SECRET_THING"\n', { debug_trace_disabled: true }, { CI_DEBUG_TRACE: 'true', SECRET_THING: 'visible' });
    expect(status, trace).toBe('success');
    expect(trace).toContain('WARNING: CI_DEBUG_TRACE: usage is disabled on this Runner');
    // With the trace on, bash would print each command as it runs (`+ echo ...`).
    expect(trace).not.toMatch(/^\++ echo/m);
    const on = await runJob('j:\n  script:\n    - echo "value is $SECRET_THING"\n', {}, { CI_DEBUG_TRACE: 'true', SECRET_THING: 'visible' });
    expect(on.trace).toMatch(/^\++ echo/m);
  }, 60_000);
});

describe('[runners.artifact]', () => {
  it('gives up waiting for the server\'s answer to an upload after response_header_timeout, and retries', async () => {
    const fault = t.server.faults.add({ endpoint: 'upload_artifacts', action: 'delay', delayMs: 5000, count: 1 });
    try {
      const { status, trace } = await runJob('j:\n  script:\n    - echo x > out.txt\n  artifacts:\n    paths: [out.txt]\n', { artifact: { response_header_timeout: '1s' } });
      expect(status, trace).toBe('success');
      expect(trace).toMatch(/WARNING: uploading artifacts failed \([^)]*(?:headers|1000 ms|1 s)[^)]*\); retrying/);
    } finally {
      t.server.faults.remove(fault);
    }
  }, 60_000);

  it('ends an upload that outlasts upload_timeout', async () => {
    const fault = t.server.faults.add({ endpoint: 'upload_artifacts', action: 'delay', delayMs: 5000, count: 1 });
    try {
      const { status, trace } = await runJob('j:\n  script:\n    - echo x > out.txt\n  artifacts:\n    paths: [out.txt]\n', { artifact: { upload_timeout: '1s' } });
      expect(status, trace).toBe('success');
      expect(trace).toContain('the request took longer than 1000 ms');
    } finally {
      t.server.faults.remove(fault);
    }
  }, 60_000);
});
