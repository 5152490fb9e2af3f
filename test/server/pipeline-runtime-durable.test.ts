/**
 * The runtime state of pipelines in a data dir: retried builds, failure reasons, coverage and
 * delayed jobs survive a restart, and a delayed job is still queued at its time afterwards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createReferenceServer, type ReferenceServer } from '../../src/server/index.js';
import { createGitRepo } from '../helpers/git.js';
import { api, LEGACY_INFO } from './raw-http.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function open(dataDir: string, repo: string): Promise<ReferenceServer> {
  const server = await createReferenceServer({ dataDir, projects: [{ name: 'g/p', path: repo }], registrationToken: 'reg-token-1234567890', adminToken: 'admin-token' });
  cleanup.push(() => server.close());
  return server;
}

describe('runtime state in a data dir', () => {
  it('keeps retried builds, failure reasons, coverage and scheduled jobs across a restart', async () => {
    const repo = await createGitRepo({ 'README.md': 'hi\n' });
    const root = await mkdtemp(join(tmpdir(), 'ci-runner-runtime-'));
    cleanup.push(() => rm(repo, { recursive: true, force: true }), () => rm(root, { recursive: true, force: true }));
    const dataDir = join(root, 'data');
    const first = await open(dataDir, repo);
    const registered = await api(first.url, 'POST', '/runners/register.json', { json: { token: 'reg-token-1234567890', info: LEGACY_INFO } });
    const { token } = JSON.parse(registered.text) as { token: string };
    const p = await first.createPipeline({
      project: 'g/p',
      config: "flaky:\n  retry: 1\n  coverage: '/cov (\\d+)%/'\n  script: [x]\nlater:\n  when: delayed\n  start_in: 3 seconds\n  needs: []\n  script: [y]\n",
    });
    const [flaky, later] = p.jobs;
    const taken = JSON.parse((await api(first.url, 'POST', '/builds/register.json', { json: { token, info: LEGACY_INFO } })).text) as BuildPayload;
    expect(taken.id).toBe(flaky!.id);
    const update = await api(first.url, 'PUT', `/builds/${taken.id}.json`, { json: { token, state: 'failed', trace: 'cov 40%\nERROR: Job failed: exit status 1\n' } });
    expect(update.status).toBe(200);
    await first.close();

    const second = await open(dataDir, repo);
    const old = second.getJob(flaky!.id)!;
    expect([old.status, old.retried, old.failure_reason, old.coverage]).toEqual(['failed', true, 'script_failure', 40]);
    const view = second.getPipeline(p.id)!;
    expect(view.retried?.map((job) => job.id)).toEqual([flaky!.id]);
    const retry = view.jobs.find((job) => job.name === 'flaky')!;
    expect([retry.status, second.getJob(retry.id)?.attempt]).toEqual(['pending', 1]);
    expect(second.getJob(later!.id)?.status).toBe('scheduled');
    const deadline = Date.now() + 30_000;
    while (second.getJob(later!.id)?.status === 'scheduled' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(second.getJob(later!.id)?.status).toBe('pending');
  }, 60_000);
});
