/**
 * What API v4 adds to the server's records survives a restart with a data dir: a runner created on
 * the server (its glrt- token, scope, limits), its managers, a reset token, and a job being canceled
 * gracefully, which its runner can still finish.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReferenceServer, type ReferenceServer } from '../../src/server/index.js';
import { createGitRepo } from '../helpers/git.js';
import { raw } from './raw-http.js';
import { R14_FEATURES, takeJob, updateJob, v4 } from './v4-http.js';

const cleanup: string[] = [];
let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function start(repo: string, dataDir: string): Promise<ReferenceServer> {
  server = await createReferenceServer({ dataDir, adminToken: 'durable-admin', projects: [{ name: 'group/project', path: repo }] });
  return server;
}

describe('v4 records in the data dir', () => {
  it('keep a created runner, its managers, a reset token and a canceling job across a restart', async () => {
    const repo = await createGitRepo({ 'README.md': 'hi\n' });
    const dataDir = await mkdtemp(join(tmpdir(), 'ci-runner-v4-durable-'));
    cleanup.push(repo, dataDir);
    let t = await start(repo, dataDir);
    const admin = { 'private-token': 'durable-admin' };
    const created = JSON.parse((await raw(t.url, 'POST', '/admin/api/runners', { json: { description: 'kept', tags: ['k'], maximum_timeout: 1200, access_level: 'ref_protected' }, headers: admin })).text) as { id: number; token: string };
    const reset = JSON.parse((await v4(t.url, 'POST', '/runners/reset_authentication_token', { json: { token: created.token } })).text) as { token: string };
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: reset.token, system_id: 's_000000000001' } })).status).toBe(200);
    await t.createPipeline({ project: 'group/project', config: 'a:\n  tags: [k]\n  script: [x]\n' });
    const job = await takeJob(t, reset.token, { info: { features: { ...R14_FEATURES, cancel_gracefully: true } } });
    expect(t.cancelJob(job.id)?.status).toBe('canceling');
    await t.close();

    t = await start(repo, dataDir);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: created.token } })).status).toBe(403);
    expect((await v4(t.url, 'POST', '/runners/verify', { json: { token: reset.token } })).status).toBe(200);
    const runners = JSON.parse((await raw(t.url, 'GET', '/admin/api/runners', { headers: admin })).text) as Array<Record<string, unknown>>;
    expect(runners.find((r) => r.id === created.id)).toMatchObject({
      registration: 'created', tags: ['k'], maximum_timeout: 1200, access_level: 'ref_protected', managers: [expect.objectContaining({ system_id: 's_000000000001' })],
    });
    expect(t.getJob(job.id)?.status).toBe('canceling');
    const final = await updateJob(t, job, { state: 'failed', failure_reason: 'unknown_failure' });
    expect(final.headers['job-status']).toBe('canceled');
    expect(t.getJob(job.id)?.status).toBe('canceled');
  });
});
