/**
 * `resource_group:` on the reference server, driven by a raw-HTTP runner: a job whose group another
 * job holds is `waiting_for_resource` (server state, admin API, the pipeline's status) and gets the
 * group when that job ends or is canceled; groups are names with variables expanded and span
 * pipelines; GitLab's process modes, set through the admin API as GitLab's API sets them, and kept in
 * the data dir.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReferenceServer } from '../../src/server/index.js';
import type { PipelineView } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';
import { raw } from './raw-http.js';

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
const admin = (method: string, path: string, form?: Record<string, string>) =>
  raw(t.url, method, `/admin/api${path}`, { headers: { 'private-token': t.server.adminToken }, ...(form ? { form } : {}) });
const project = encodeURIComponent('group/project');

/** Takes the next pending build, or fails. */
async function take(): Promise<{ id: number; name: string; done: (state?: 'success' | 'failed') => Promise<void> }> {
  const build = await runner.poll();
  if (!build) throw new Error('expected a pending build');
  return { id: build.id, name: build.name, done: async (state = 'success') => void expect(await runner.update(build, state, 'ok\n')).toBe(200) };
}

describe('a resource group', () => {
  it('holds a second job of the group as waiting_for_resource until the first ends', async () => {
    const p = await t.pipeline('a:\n  resource_group: deploy\n  script: [x]\nb:\n  resource_group: deploy\n  script: [x]\nfree:\n  script: [x]\n');
    expect(statuses(p)).toEqual(['a:pending', 'b:waiting_for_resource', 'free:pending']);
    const b = p.jobs[1]!.id;
    expect(JSON.parse((await admin('GET', `/jobs/${b}`)).text)).toMatchObject({ status: 'waiting_for_resource', resource_group: 'deploy' });
    const first = await take();
    const second = await take();
    expect([first.name, second.name].sort()).toEqual(['a', 'free']);
    expect(await runner.poll()).toBeUndefined();
    await (first.name === 'a' ? first : second).done();
    expect(statuses(p)).toContain('b:pending');
    expect((await take()).name).toBe('b');
  });

  it('shows a pipeline whose only unfinished job waits as waiting_for_resource, across pipelines of the project', async () => {
    const yaml = 'deploy:\n  resource_group: production\n  script: [x]\n';
    const p1 = await t.pipeline(yaml);
    const p2 = await t.pipeline(yaml);
    expect(statuses(p1)).toEqual(['deploy:pending']);
    expect(t.server.getPipeline(p2.id)).toMatchObject({ status: 'waiting_for_resource', jobs: [{ status: 'waiting_for_resource' }] });
    await (await take()).done('failed');
    expect(t.server.getPipeline(p2.id)?.status).toBe('pending');
  });

  it('is its name with variables expanded: other values are other groups', async () => {
    const p = await t.pipeline('.d:\n  resource_group: deploy-$TARGET\n  script: [x]\nto-a:\n  extends: .d\n  variables: { TARGET: a }\nto-b:\n  extends: .d\n  variables: { TARGET: b }\nto-a-again:\n  extends: .d\n  variables: { TARGET: a }\n');
    expect(statuses(p)).toEqual(['to-a:pending', 'to-b:pending', 'to-a-again:waiting_for_resource']);
  });

  it('goes to the next job when its holder is canceled, and a waiting job can be canceled', async () => {
    const p = await t.pipeline('a:\n  resource_group: g\n  script: [x]\nb:\n  resource_group: g\n  script: [x]\nc:\n  resource_group: g\n  script: [x]\n');
    const [a, b, c] = p.jobs.map((job) => job.id);
    expect((await admin('POST', `/jobs/${c}/cancel`)).status).toBe(200);
    expect(statuses(p)).toEqual(['a:pending', 'b:waiting_for_resource', 'c:canceled']);
    expect((await admin('POST', `/jobs/${a}/cancel`)).status).toBe(200);
    expect(statuses(p)).toEqual(['a:canceled', 'b:pending', 'c:canceled']);
    expect((await take()).id).toBe(b);
  });

  it('puts a played manual job and a retried one in line like any other', async () => {
    const p = await t.pipeline('hold:\n  resource_group: g\n  script: [x]\ngate:\n  resource_group: g\n  when: manual\n  script: [x]\n');
    const [hold, gate] = p.jobs.map((job) => job.id);
    expect(statuses(p)).toEqual(['hold:pending', 'gate:manual']);
    expect(JSON.parse((await admin('POST', `/jobs/${gate}/play`)).text)).toMatchObject({ status: 'waiting_for_resource' });
    const first = await take();
    expect(first.id).toBe(hold);
    await first.done('failed');
    expect(statuses(p)).toEqual(['hold:failed', 'gate:pending']);
    const retried = JSON.parse((await admin('POST', `/jobs/${hold}/retry`)).text) as { id: number; status: string };
    expect(retried.status).toBe('waiting_for_resource');
    await (await take()).done();
    expect(t.server.getJob(retried.id)?.status).toBe('pending');
  });
});

describe('resource group process modes', () => {
  /** The first pipeline's deploy comes only after its build; the second pipeline's deploy is ready at once. */
  const TWO_STEPS = 'stages: [build, deploy]\nbuild:\n  stage: build\n  script: [x]\ndeploy:\n  stage: deploy\n  resource_group: production\n  script: [x]\n';
  const DEPLOY_ONLY = 'deploy:\n  stage: deploy\n  resource_group: production\n  script: [x]\nstages: [deploy]\n';

  async function setMode(mode: string): Promise<{ status: number; body: unknown }> {
    const answer = await admin('PUT', `/projects/${project}/resource_groups/production`, { process_mode: mode });
    return { status: answer.status, body: JSON.parse(answer.text) as unknown };
  }

  it('lists the groups of a project, unordered until set, and refuses what GitLab refuses', async () => {
    expect(JSON.parse((await admin('GET', `/projects/${project}/resource_groups`)).text)).toEqual([]);
    expect((await setMode('oldest_first')).status).toBe(404);
    await t.pipeline(DEPLOY_ONLY);
    const listed = JSON.parse((await admin('GET', `/projects/${project}/resource_groups`)).text) as Array<Record<string, string>>;
    expect(listed).toEqual([expect.objectContaining({ key: 'production', process_mode: 'unordered' })]);
    expect(await setMode('first_come')).toMatchObject({ status: 400, body: { message: expect.stringContaining('process_mode does not have a valid value') } });
    expect(await setMode('newest_first')).toMatchObject({ status: 200, body: { key: 'production', process_mode: 'newest_first' } });
    const projectId = (JSON.parse((await admin('GET', '/projects')).text) as Array<{ id: number; name: string }>).find((p) => p.name === 'group/project')!.id;
    expect(JSON.parse((await admin('GET', `/projects/${projectId}/resource_groups/production`)).text)).toMatchObject({ process_mode: 'newest_first' });
    expect((await admin('GET', '/projects/nobody%2Fnothing/resource_groups')).status).toBe(404);
    expect((await admin('GET', `/projects/${project}/resource_groups/staging`)).status).toBe(404);
  });

  it('unordered: a ready job takes the free group, though an older pipeline\'s job is still to come', async () => {
    const older = await t.pipeline(TWO_STEPS);
    const newer = await t.pipeline(DEPLOY_ONLY);
    expect(statuses(older)).toEqual(['build:pending', 'deploy:created']);
    expect(statuses(newer)).toEqual(['deploy:pending']);
  });

  it('oldest_first: the group stays free for the older pipeline\'s job still to come, which then goes first', async () => {
    await t.pipeline(DEPLOY_ONLY);
    expect((await setMode('oldest_first')).status).toBe(200);
    await (await take()).done();
    const older = await t.pipeline(TWO_STEPS);
    const newer = await t.pipeline(DEPLOY_ONLY);
    expect(statuses(newer)).toEqual(['deploy:waiting_for_resource']);
    const upcoming = JSON.parse((await admin('GET', `/projects/${project}/resource_groups/production/upcoming_jobs`)).text) as Array<{ id: number; status: string }>;
    expect(upcoming.map((job) => `${job.id}:${job.status}`)).toEqual([`${older.jobs[1]!.id}:created`, `${newer.jobs[0]!.id}:waiting_for_resource`]);
    const build = await take();
    expect(build.name).toBe('build');
    await build.done();
    expect(statuses(older)).toEqual(['build:success', 'deploy:pending']);
    expect(statuses(newer)).toEqual(['deploy:waiting_for_resource']);
    await (await take()).done();
    expect(statuses(newer)).toEqual(['deploy:pending']);
  });

  it('newest_first and newest_ready_first: the newest pipeline\'s waiting job goes first', async () => {
    for (const mode of ['newest_first', 'newest_ready_first']) {
      const holder = await t.pipeline(DEPLOY_ONLY);
      expect((await setMode(mode)).status).toBe(200);
      const second = await t.pipeline(DEPLOY_ONLY);
      const third = await t.pipeline(DEPLOY_ONLY);
      expect([statuses(holder), statuses(second), statuses(third)].flat()).toEqual(['deploy:pending', 'deploy:waiting_for_resource', 'deploy:waiting_for_resource']);
      await (await take()).done();
      expect([statuses(second), statuses(third)].flat(), mode).toEqual(['deploy:waiting_for_resource', 'deploy:pending']);
      await (await take()).done();
      await (await take()).done();
    }
  });

  it('keeps the process mode in the data dir', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ci-runner-resource-groups-'));
    try {
      const open = () => createReferenceServer({ dataDir: join(root, 'data'), projects: [{ name: 'group/project', path: t.projectPath }] });
      const first = await open();
      await first.createPipeline({ project: 'group/project', config: DEPLOY_ONLY });
      const put = await raw(first.url, 'PUT', `/admin/api/projects/${project}/resource_groups/production`, { headers: { 'private-token': first.adminToken }, form: { process_mode: 'oldest_first' } });
      expect(put.status).toBe(200);
      await first.close();
      const again = await open();
      try {
        const got = await raw(again.url, 'GET', `/admin/api/projects/${project}/resource_groups/production`, { headers: { 'private-token': again.adminToken } });
        expect(JSON.parse(got.text)).toMatchObject({ process_mode: 'oldest_first' });
      } finally {
        await again.close();
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
