/** docs/protocol-v1.md §4.4 (E4 request a build, §4.4.1 last_update), §4.5 (E5 update), §11.1 scheduling. */
import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createGitRepo } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { api, LEGACY_INFO, raw } from './raw-http.js';

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer();
});
const extraRepos: string[] = [];
afterEach(async () => {
  await t.close();
  for (const repo of extraRepos.splice(0)) await rm(repo, { recursive: true, force: true });
});

const ONE_JOB = 'test:\n  script:\n    - echo hello\n';

function poll(token: string, lastUpdate?: string) {
  return api(t.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token, ...(lastUpdate ? { last_update: lastUpdate } : {}) } });
}

async function takeBuild(token: string): Promise<BuildPayload> {
  const response = await poll(token);
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as BuildPayload;
}

describe('E4 request a build', () => {
  it('answers 204 with an empty body and X-GitLab-Last-Update when nothing is pending', async () => {
    const { token } = await t.registerRunner();
    const response = await poll(token);
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect(response.headers['x-gitlab-last-update']).toMatch(/^\w+$/);
  });

  it('answers 201 with exact application/json, no X-GitLab-Last-Update, and the build running', async () => {
    const { token, id } = await t.registerRunner();
    const pipeline = await t.pipeline(ONE_JOB);
    const response = await api(t.url, 'POST', '/builds/register', { json: { info: LEGACY_INFO, token } });
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['x-gitlab-last-update']).toBeUndefined();
    const build = JSON.parse(response.text) as BuildPayload;
    expect(build.id).toBe(pipeline.jobs[0]?.id);
    expect(build.status).toBe('running');
    expect(t.server.getJob(build.id)).toMatchObject({ status: 'running', runner_id: id });
  });

  it("sends the image as §5.3's string, and as the map with its entrypoint when the job replaces it", async () => {
    const { token } = await t.registerRunner();
    await t.pipeline('default:\n  image: { name: "tool:1", entrypoint: [""] }\nplain:\n  image: alpine:3\n  script: x\nreplaced:\n  script: x\n');
    const options = [(await takeBuild(token)).options, (await takeBuild(token)).options];
    expect(options).toEqual(expect.arrayContaining([expect.objectContaining({ image: 'alpine:3' }), expect.objectContaining({ image: { name: 'tool:1', entrypoint: [''] } })]));
  });

  it('answers 403 for an unknown runner token and 404 for a paused runner', async () => {
    expect((await poll('unknown')).status).toBe(403);
    const { id, token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const admin = { headers: { 'private-token': t.server.adminToken } };
    expect((await raw(t.url, 'POST', `/admin/api/runners/${id}/pause`, admin)).status).toBe(200);
    expect((await poll(token)).status).toBe(404);
    expect((await raw(t.url, 'POST', `/admin/api/runners/${id}/resume`, admin)).status).toBe(200);
    expect((await poll(token)).status).toBe(201);
  });

  it('short-circuits when last_update equals the queue value, and ticks it when a build is queued', async () => {
    const { token } = await t.registerRunner();
    const first = await poll(token);
    const value = first.headers['x-gitlab-last-update'] as string;
    const again = await poll(token, value);
    expect(again.status).toBe(204);
    expect(again.headers['x-gitlab-last-update']).toBe(value);
    await t.pipeline(ONE_JOB);
    // The queue value moved on, so the same last_update now searches and finds the build.
    const found = await poll(token, value);
    expect(found.status).toBe(201);
  });

  it('gives the same build to exactly one of two runners polling at the same instant', async () => {
    const a = await t.registerRunner();
    const b = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const answers = await Promise.all([poll(a.token), poll(b.token), poll(a.token), poll(b.token)]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 204, 204, 204]);
  });

  it('never hands out a build twice when many runners race for many builds', async () => {
    const runners = await Promise.all(Array.from({ length: 6 }, () => t.registerRunner()));
    await t.pipeline(Array.from({ length: 5 }, (_, i) => `job${i}:\n  script:\n    - echo ${i}\n`).join(''));
    const answers = await Promise.all(runners.flatMap((r) => [poll(r.token), poll(r.token)]));
    const ids = answers.filter((r) => r.status === 201).map((r) => (JSON.parse(r.text) as BuildPayload).id);
    expect(ids.length).toBe(5);
    expect(new Set(ids).size).toBe(5);
  });

  it('honours tags and run_untagged', async () => {
    const untaggedOnly = await t.registerRunner();
    const docker = await t.registerRunner({ tags: ['docker'], runUntagged: false });
    await t.pipeline('tagged:\n  tags: [docker]\n  script:\n    - echo 1\n');
    expect((await poll(untaggedOnly.token)).status).toBe(204);
    expect((await poll(docker.token)).status).toBe(201);
    await t.pipeline(ONE_JOB);
    expect((await poll(docker.token)).status).toBe(204);
    expect((await poll(untaggedOnly.token)).status).toBe(201);
  });

  it('requires every build tag to be among the runner tags', async () => {
    const docker = await t.registerRunner({ tags: ['docker'] });
    const both = await t.registerRunner({ tags: ['docker', 'linux'] });
    await t.pipeline('tagged:\n  tags: [docker, linux]\n  script:\n    - echo 1\n');
    expect((await poll(docker.token)).status).toBe(204);
    expect((await poll(both.token)).status).toBe(201);
  });

  it('serves the oldest build first', async () => {
    const { token } = await t.registerRunner();
    const first = await t.pipeline(ONE_JOB);
    await t.pipeline(ONE_JOB);
    expect((await takeBuild(token)).id).toBe(first.jobs[0]?.id);
  });
});

describe('E4 scheduling across projects (§11.1)', () => {
  async function withSecondProject(): Promise<void> {
    await t.close();
    const other = await createGitRepo({ 'README.md': 'other\n' });
    extraRepos.push(other);
    t = await startTestServer({ projects: [{ name: 'other/project', path: other }] });
  }

  it('gives a specific runner only its own project\'s builds', async () => {
    await withSecondProject();
    const projects = JSON.parse((await raw(t.url, 'GET', '/admin/api/projects', { headers: { 'private-token': t.server.adminToken } })).text) as Array<{ name: string; runners_token: string }>;
    const own = projects.find((p) => p.name === 'group/project')!;
    const registered = await api(t.url, 'POST', '/runners/register.json', { json: { token: own.runners_token } });
    const specific = (JSON.parse(registered.text) as { token: string }).token;
    await t.server.createPipeline({ project: 'other/project', config: ONE_JOB });
    expect((await poll(specific)).status).toBe(204);
    const mine = await t.pipeline(ONE_JOB);
    expect((await takeBuild(specific)).id).toBe(mine.jobs[0]?.id);
  });

  it('serves shared runners fairly: the project with fewer running builds goes first', async () => {
    await withSecondProject();
    const { token } = await t.registerRunner();
    await t.pipeline('a1:\n  script: [x]\na2:\n  script: [x]\n');
    const other = await t.server.createPipeline({ project: 'other/project', config: ONE_JOB });
    const first = await takeBuild(token);
    expect(first.name).toBe('a1');
    // group/project now runs one build on a shared runner, other/project none: other goes next.
    expect((await takeBuild(token)).id).toBe(other.jobs[0]?.id);
    expect((await takeBuild(token)).name).toBe('a2');
  });
});

describe('E4 long polling', () => {
  it('holds a poll open and answers 201 as soon as a build is queued', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 20_000 });
    const { token } = await t.registerRunner();
    const waiting = poll(token);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pipeline = await t.pipeline(ONE_JOB);
    const response = await waiting;
    expect(response.status).toBe(201);
    expect((JSON.parse(response.text) as BuildPayload).id).toBe(pipeline.jobs[0]?.id);
  });

  it('answers 204 with the queue value when the long poll times out', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 300 });
    const { token } = await t.registerRunner();
    const response = await poll(token);
    expect(response.status).toBe(204);
    expect(response.headers['x-gitlab-last-update']).toBeDefined();
  });

  it('does not hand a build to a poll whose client has gone away', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 60_000 });
    const { token } = await t.registerRunner();
    const controller = new AbortController();
    const gone = api(t.url, 'POST', '/builds/register.json', { json: { token }, signal: controller.signal }).catch(() => 'aborted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await gone).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const pipeline = await t.pipeline(ONE_JOB);
    expect(t.server.getJob(pipeline.jobs[0]!.id)?.status).toBe('pending');
    expect((await poll(token)).status).toBe(201);
  });

  it('ends a held poll when the server closes', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 60_000 });
    const { token } = await t.registerRunner();
    const waiting = poll(token).then(
      (r) => r.status,
      () => -1,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await t.server.close();
    expect([204, -1]).toContain(await waiting);
  });
});

describe('E5 update a build', () => {
  it('answers 200 to a running-state update without trace and keeps the build running', async () => {
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    const response = await api(t.url, 'PUT', `/builds/${build.id}.json`, { json: { info: LEGACY_INFO, token, state: 'running' } });
    expect(response.status).toBe(200);
    expect(t.server.getJob(build.id)?.status).toBe('running');
  });

  it('replaces the stored trace with `trace` and moves to success', async () => {
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token, trace: 'partial' } });
    const response = await api(t.url, 'PUT', `/builds/${build.id}.json`, { json: { token, state: 'success', trace: 'full trace\n' } });
    expect(response.status).toBe(200);
    expect((await t.server.getTrace(build.id)).toString()).toBe('full trace\n');
    expect(t.server.getJob(build.id)).toMatchObject({ status: 'success', trace_size: 11 });
    expect(t.server.getJob(build.id)?.finished_at).not.toBeNull();
  });

  it('moves to failed on state=failed', async () => {
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    await api(t.url, 'PUT', `/builds/${build.id}`, { form: { token, state: 'failed' } });
    expect(t.server.getJob(build.id)?.status).toBe('failed');
  });

  it('answers 404 when the build is not running, not this runner\'s, or unknown; 403 for a bad token', async () => {
    const a = await t.registerRunner();
    const b = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(a.token);
    expect((await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token: b.token, state: 'success' } })).status).toBe(404);
    expect((await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token: 'bad', state: 'success' } })).status).toBe(403);
    expect((await api(t.url, 'PUT', '/builds/999999', { json: { token: a.token } })).status).toBe(404);
    expect((await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token: a.token, state: 'success' } })).status).toBe(200);
    expect((await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token: a.token, state: 'failed' } })).status).toBe(404);
    expect(t.server.getJob(build.id)?.status).toBe('success');
  });

  it('answers 404 to the final update of a build canceled by the server', async () => {
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    t.server.cancelJob(build.id);
    const response = await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token, state: 'failed', trace: 'x' } });
    expect(response.status).toBe(404);
    expect(t.server.getJob(build.id)?.status).toBe('canceled');
  });

  it('masks the build token in stored traces without changing the length', async () => {
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    const trace = `token is ${build.token}!`;
    await api(t.url, 'PUT', `/builds/${build.id}`, { json: { token, trace } });
    const stored = (await t.server.getTrace(build.id)).toString();
    expect(stored).toBe(`token is ${'x'.repeat(build.token.length)}!`);
  });

  it('fails a running build that sends nothing for the stale timeout', async () => {
    await t.close();
    t = await startTestServer({ staleBuildTimeoutMs: 300 });
    const { token } = await t.registerRunner();
    await t.pipeline(ONE_JOB);
    const build = await takeBuild(token);
    await t.waitForJob(build.id, (job) => job.status === 'failed', 20_000);
  });
});
