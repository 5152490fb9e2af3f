/**
 * `retry:when` against the failure reasons the server can tell over API v1, driven by a raw-HTTP
 * legacy runner: the reason comes from the trace's last failure line, or from the stale-build sweep.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineView } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';

let t: TestServer;
let runner: LegacyRunner;
beforeEach(async () => {
  t = await startTestServer();
  runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
});
afterEach(async () => {
  await t.close();
});

const statuses = (p: PipelineView): string[] => t.server.getPipeline(p.id)!.jobs.map((job) => `${job.name}:${job.status}`);

async function failWith(trace: string): Promise<number> {
  const build = await runner.poll();
  if (!build) throw new Error('expected a build');
  expect(await runner.update(build, 'failed', trace)).toBe(200);
  return build.id;
}

describe('retry:when', () => {
  it('counts a job timeout as stuck_or_timeout_failure, and a script failure as nothing of the kind', async () => {
    const p = await t.pipeline('slow:\n  retry: { max: 1, when: stuck_or_timeout_failure }\n  script: [sleep 100]\n');
    const first = await failWith('$ sleep 100\nERROR: Job failed: execution took longer than 2 seconds\n');
    expect(t.server.getJob(first)?.failure_reason).toBe('job_execution_timeout');
    expect(statuses(p)).toEqual(['slow:pending']);
    const second = await failWith('$ sleep 100\nERROR: Job failed: exit status 1\n');
    expect(t.server.getJob(second)?.failure_reason).toBe('script_failure');
    expect(statuses(p)).toEqual(['slow:failed']);
    expect(t.server.getPipeline(p.id)?.retried?.map((job) => job.id)).toEqual([first]);
  });

  it('stops after max retries', async () => {
    const p = await t.pipeline('flaky:\n  retry: 2\n  script: [x]\n');
    for (let i = 0; i < 3; i += 1) await failWith('ERROR: Job failed: exit status 1\n');
    expect(statuses(p)).toEqual(['flaky:failed']);
    expect(t.server.getPipeline(p.id)?.retried).toHaveLength(2);
    expect(await runner.poll()).toBeUndefined();
  });

  it('retries a job its runner stopped reporting on when stuck_or_timeout_failure is named', async () => {
    await t.close();
    t = await startTestServer({ staleBuildTimeoutMs: 300 });
    runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
    const p = await t.pipeline('lost:\n  retry: { max: 1, when: [stuck_or_timeout_failure] }\n  script: [x]\n');
    const build = await runner.poll();
    await t.waitForJob(build!.id, (job) => job.status === 'failed');
    expect(t.server.getJob(build!.id)?.failure_reason).toBe('stuck_or_timeout_failure');
    expect(statuses(p)).toEqual(['lost:pending']);
  });
});
