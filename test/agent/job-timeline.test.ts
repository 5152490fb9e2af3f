import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { runJobs } from '../../src/agent/run-jobs.js';
import { defaultServices, type SharedServices } from '../../src/agent/services.js';
import type { Executor } from '../../src/executors/types.js';
import { createLogger, silentLogger } from '../../src/log/index.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';

let t: TestServer;
let token: string;
useTestServer(
  (server, runnerToken) => {
    t = server;
    token = runnerToken;
  },
  { files: { 'README.md': '# p\n' } },
);

/** Runs `jobs` queued jobs one at a time on `services`. */
async function runQueued(services: SharedServices, jobs: number): Promise<void> {
  const d = await workDirs();
  const runner = runnerSchema.parse({ name: 'timeline', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  await runJobs({ runner, services, waitTimeoutMs: 5_000, pollIntervalMs: 100, maxBuilds: jobs, limit: 1, requestConcurrency: 1, stopWaiting: never, stopJob: never });
}

describe('job timeline and cleanup', () => {
  it('logs each step of a job under --debug, in the order they ran', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    const logger = createLogger({ level: 'debug', format: 'json', destination });
    const p = await t.pipeline('j:\n  script:\n    - echo hello\n');
    await runQueued(defaultServices(logger), 1);
    expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('success');
    const steps = lines.map((line) => JSON.parse(line) as { msg: string; step?: string; at_ms?: number; took_ms?: number }).filter((r) => r.msg === 'timeline');
    const names = steps.map((s) => s.step ?? '');
    // The build stage runs in get_sources' process (nothing to do between them): its script is
    // written before that process starts.
    const order = ['executor created', 'trace started', 'prepare_executor', 'step_script: script written', 'get_sources: script written', 'git fetch', 'git checkout', 'get_sources', 'step_script', 'final update'];
    const positions = order.map((name) => names.indexOf(name));
    expect(positions.every((p) => p >= 0), names.join(', ')).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    // The cleanup runs beside the final update: it begins as the update does, and may end first.
    const at = (name: string) => steps.find((s) => s.step === name)?.at_ms ?? -1;
    expect(at('cleanup'), names.join(', ')).toBeGreaterThanOrEqual(at('final update'));
    expect(names.indexOf('first PATCH')).toBeGreaterThanOrEqual(0);
    expect(names.indexOf('first PATCH')).toBeLessThan(names.indexOf('final update'));
    for (const step of steps) expect(step.took_ms).toBeGreaterThanOrEqual(0);
  });

  it('cleans up beside the final update without holding it back, and the slot\'s next job waits for that cleanup', async () => {
    const events: string[] = [];
    const base = defaultServices(silentLogger());
    let cleanups = 0;
    const services: SharedServices = {
      ...base,
      createExecutor: async (runner) => {
        const inner = await base.createExecutor(runner);
        const wrapped: Executor = {
          name: inner.name,
          runStage: (request) => {
            const id = request.variables.find((v) => v.key === 'CI_JOB_ID')?.value ?? '?';
            events.push(`${request.stage} ${id}`);
            return inner.runStage(request);
          },
          cleanup: async () => {
            cleanups += 1;
            const statuses = ids.map((jobId) => t.server.getJob(jobId)?.status);
            events.push(`cleanup ${cleanups} sees ${statuses.join(',')}`);
            // Slow enough that a next job which did not wait would start its stages first.
            await new Promise((resolve) => setTimeout(resolve, 1000));
            events.push(`cleanup ${cleanups} done, sees ${ids.map((jobId) => t.server.getJob(jobId)?.status).join(',')}`);
            await inner.cleanup();
          },
        };
        return wrapped;
      },
    };
    const none = '  variables:\n    GIT_STRATEGY: none\n  script: ["true"]\n';
    const p = await t.pipeline(`a:\n${none}b:\n${none}`);
    const ids = p.jobs.map((job) => job.id);
    await runQueued(services, 2);
    const jobIds = ids;
    expect(jobIds.map((id) => t.server.getJob(id)?.status)).toEqual(['success', 'success']);
    const first = events.findIndex((e) => e.startsWith('cleanup 1 done'));
    const secondJobStart = events.findIndex((e) => e === `step_script ${jobIds[1]}`);
    expect(first, events.join('\n')).toBeGreaterThanOrEqual(0);
    expect(first, events.join('\n')).toBeLessThan(secondJobStart);
    // The first job's cleanup began while its job was still running on the server (the slot went back
    // as the final update went out), and the final update did not wait for it: the server had the job's
    // success before the (slow) cleanup was done.
    expect(events, events.join('\n')).toContain('cleanup 1 sees running,pending');
    expect(events.find((e) => e.startsWith('cleanup 1 done')), events.join('\n')).toMatch(/^cleanup 1 done, sees success,/);
  });
});
