/**
 * The web page's server side over real HTTP (no browser): who may see and do what, that nothing
 * secret goes out, and the live log's stream and download. A real reference server on port 0, a
 * runner speaking the real client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import type { BuildPayload } from '../../src/protocol/types.js';
import { TAIL_BYTES, wholeUtf8Length } from '../../src/server/ui/trace-stream.js';
import { PIPELINES_PER_PAGE } from '../../src/server/ui/views.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openSse } from './sse.js';

const ADMIN = 'server-ui-admin-token-123456';
let t: TestServer;
let client: RunnerApiClient;
let runnerToken: string;
let cookie: string;
let csrf: string;

beforeAll(async () => {
  t = await startTestServer({ adminToken: ADMIN, files: { '.gitlab-ci.yml': 'from-file:\n  script:\n    - echo from the file\n' } });
  client = new RunnerApiClient({ url: t.url });
  runnerToken = (await t.registerRunner()).token;
  const signIn = await fetch(`${t.url}/-/ui/sign-in`, { method: 'POST', body: new URLSearchParams({ token: ADMIN, next: '/' }), redirect: 'manual' });
  cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const page = await (await fetch(`${t.url}/`, { headers: { cookie } })).text();
  csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
});
afterAll(async () => {
  await client.close();
  await t.close();
});

function post(path: string, body: unknown = {}, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}${path}`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** Queues a one-job pipeline and takes its build as the runner. */
async function runningBuild(script = 'echo hi'): Promise<BuildPayload> {
  await t.pipeline(`job:\n  script:\n    - ${script}\n`);
  const result = await client.requestBuild(runnerToken, undefined);
  if (result.kind !== 'build') throw new Error(`no build: ${result.kind}`);
  return result.build;
}

describe('access to the web page', () => {
  it('answers every page path with only the sign-in form, and the API with 401, without the cookie', async () => {
    for (const path of ['/', '/jobs/1', '/pipelines/1', '/runners', '/pipelines/new']) {
      const response = await fetch(`${t.url}${path}`);
      const html = await response.text();
      expect(html, path).toContain('action="/-/ui/sign-in"');
      expect(html, path).not.toContain('csrf-token');
      expect(html, path).not.toContain('main.js');
    }
    expect((await fetch(`${t.url}/-/ui/api/pipelines`)).status).toBe(401);
    expect((await fetch(`${t.url}/-/ui/api/events`)).status).toBe(401);
  });

  it('refuses a wrong token at sign-in and sets an HttpOnly SameSite=Strict cookie for the right one', async () => {
    const wrong = await fetch(`${t.url}/-/ui/sign-in`, { method: 'POST', body: new URLSearchParams({ token: 'nope' }), redirect: 'manual' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const right = await fetch(`${t.url}/-/ui/sign-in`, { method: 'POST', body: new URLSearchParams({ token: ADMIN, next: '//evil.example/' }), redirect: 'manual' });
    expect(right.status).toBe(303);
    expect(right.headers.get('location')).toBe('/');
    expect(right.headers.get('set-cookie')).toMatch(/^ci_runner_admin=.+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
  });

  it('changes nothing on a POST without the CSRF token or from another origin', async () => {
    const p = await t.pipeline('waits:\n  script:\n    - echo\n');
    const id = p.jobs[0]!.id;
    expect((await post(`/-/ui/api/jobs/${id}/cancel`, {}, { 'x-csrf-token': '' })).status).toBe(403);
    expect((await post(`/-/ui/api/jobs/${id}/cancel`, {}, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await fetch(`${t.url}/-/ui/api/jobs/${id}/cancel`, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status).toBe(401);
    expect(t.server.getJob(id)?.status).toBe('pending');
    const ok = await post(`/-/ui/api/jobs/${id}/cancel`, {}, { origin: t.url });
    expect(ok.status).toBe(200);
    expect(t.server.getJob(id)?.status).toBe('canceled');
  });

  it('never sends a variable value, a build token, a runner token or a project token to the page', async () => {
    const p = await t.pipeline('variables:\n  JOB_SETTING: "job-value-hidden-1234"\nshow:\n  script:\n    - echo\n', { DEPLOY_KEY: 'pipeline-secret-5678' });
    const id = p.jobs[0]!.id;
    const bodies = await Promise.all(
      ['/-/ui/api/pipelines', `/-/ui/api/pipelines/${p.id}`, `/-/ui/api/jobs/${id}`, '/-/ui/api/runners', '/-/ui/api/projects'].map(async (path) => (await fetch(`${t.url}${path}`, { headers: { cookie } })).text()),
    );
    const all = bodies.join('\n');
    expect(all).toContain('DEPLOY_KEY');
    expect(all).toContain('JOB_SETTING');
    for (const secret of ['pipeline-secret-5678', 'job-value-hidden-1234', runnerToken, ADMIN]) expect(all).not.toContain(secret);
    expect(all).not.toMatch(/"token"|runners_token/);
  });
});

describe('what the page lists', () => {
  it('lists pipelines newest first, a page at a time', async () => {
    for (let i = 0; i < PIPELINES_PER_PAGE; i += 1) await t.pipeline(`listed-${i}:\n  when: manual\n  script:\n    - echo\n`);
    const list = async (query = '') => (await (await fetch(`${t.url}/-/ui/api/pipelines${query}`, { headers: { cookie } })).json()) as { pipelines: Array<{ id: number }>; more: boolean };
    const first = await list();
    expect(first.pipelines).toHaveLength(PIPELINES_PER_PAGE);
    expect(first.more).toBe(true);
    const ids = first.pipelines.map((p) => p.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const older = await list(`?before=${ids.at(-1)}`);
    expect(older.pipelines.length).toBeGreaterThan(0);
    expect(Math.max(...older.pipelines.map((p) => p.id))).toBeLessThan(ids.at(-1)!);
  });
});

describe('the buttons', () => {
  it("runs a new pipeline from the project's .gitlab-ci.yml at a ref, and says why when it cannot", async () => {
    const created = await post('/-/ui/api/pipelines', { project: t.projectName, ref: 'main' });
    expect(created.status).toBe(201);
    const { pipeline } = (await created.json()) as { pipeline: { id: number; stages: Array<{ jobs: Array<{ name: string }> }> } };
    expect(pipeline.stages[0]?.jobs[0]?.name).toBe('from-file');
    const missingRef = await post('/-/ui/api/pipelines', { project: t.projectName, ref: 'no-such-branch' });
    expect(missingRef.status).toBe(400);
    expect(((await missingRef.json()) as { message: string }).message).toContain('no-such-branch');
  });

  it('plays a manual job, retries a finished one and pauses and resumes a runner', async () => {
    const manual = (await t.pipeline('by-hand:\n  when: manual\n  script:\n    - echo\n')).jobs[0]!.id;
    expect((await post(`/-/ui/api/jobs/${manual}/retry`)).status).toBe(409);
    expect((await post(`/-/ui/api/jobs/${manual}/play`)).status).toBe(200);
    expect(t.server.getJob(manual)?.status).toBe('pending');
    expect((await post(`/-/ui/api/jobs/${manual}/play`)).status).toBe(409);
    t.server.cancelJob(manual);

    const plain = (await t.pipeline('again:\n  script:\n    - echo\n')).jobs[0]!.id;
    t.server.cancelJob(plain);
    const retried = await post(`/-/ui/api/jobs/${plain}/retry`);
    expect(retried.status).toBe(201);
    const { job } = (await retried.json()) as { job: { id: number; status: string; name: string } };
    expect(job).toMatchObject({ name: 'again', status: 'pending' });
    expect(job.id).not.toBe(plain);
    t.server.cancelJob(job.id);

    const runners = (await (await fetch(`${t.url}/-/ui/api/runners`, { headers: { cookie } })).json()) as Array<{ id: number }>;
    const runnerId = runners[0]!.id;
    expect(((await (await post(`/-/ui/api/runners/${runnerId}/pause`)).json()) as { runner: { active: boolean } }).runner.active).toBe(false);
    expect(((await (await post(`/-/ui/api/runners/${runnerId}/resume`)).json()) as { runner: { active: boolean } }).runner.active).toBe(true);
  });

  it('creates a runner whose glrt- token is in that answer only, and deletes it (CSRF-checked like every action)', async () => {
    expect((await post('/-/ui/api/runners', { description: 'from the page', tags: 'gpu, linux' }, { 'x-csrf-token': 'wrong' })).status).toBe(403);
    const refused = await post('/-/ui/api/runners', { tags: '', run_untagged: false });
    expect(refused.status).toBe(400);
    const created = await post('/-/ui/api/runners', { description: 'from the page', tags: 'gpu, linux', run_untagged: false, project: t.projectName, maximum_timeout: '900' });
    expect(created.status).toBe(201);
    const { runner, token } = (await created.json()) as { runner: { id: number; tags: string[]; registration: string; project: string; maximum_timeout: number }; token: string };
    expect(token).toMatch(/^glrt-/);
    expect(runner).toMatchObject({ tags: ['gpu', 'linux'], registration: 'created', project: t.projectName, maximum_timeout: 900 });
    const listing = await (await fetch(`${t.url}/-/ui/api/runners`, { headers: { cookie } })).text();
    expect(listing).toContain('from the page');
    expect(listing).not.toContain(token);
    const verify = await fetch(`${t.url}/api/v4/runners/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect(verify.status).toBe(200);
    expect((await post(`/-/ui/api/runners/${runner.id}/delete`)).status).toBe(200);
    expect((await fetch(`${t.url}/api/v4/runners/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) })).status).toBe(403);
  });

  it('announces changes on the event stream', async () => {
    const events = await openSse(`${t.url}/-/ui/api/events`, { cookie });
    try {
      expect((await events.next()).event).toBe('hello');
      await t.pipeline('announced:\n  script:\n    - echo\n');
      expect((await events.next()).event).toBe('change');
    } finally {
      events.close();
    }
  });
});

describe("a job's log", () => {
  it('streams new bytes as the runner sends them, resumes at a byte offset, and ends with the job', async () => {
    const build = await runningBuild();
    await client.patchTrace(build.id, build.token, 0, Buffer.from('first line\n'));
    const url = `${t.url}/-/ui/api/jobs/${build.id}/trace/events`;
    const live = await openSse(url, { cookie });
    try {
      const start = await live.next();
      expect(start).toMatchObject({ event: 'start', id: '0' });
      expect(await live.next()).toMatchObject({ event: 'append', id: '11', data: JSON.stringify('first line\n') });
      await client.patchTrace(build.id, build.token, 11, Buffer.from('second \u001b[32mline\u001b[0m\n'));
      const second = await live.next();
      expect(second.event).toBe('append');
      expect(JSON.parse(second.data)).toBe('second \u001b[32mline\u001b[0m\n');
      await client.updateBuild(build.id, runnerToken, { state: 'success' });
      expect((await live.next()).event).toBe('end');
    } finally {
      live.close();
    }
    const resumed = await openSse(url, { cookie, 'last-event-id': '11' });
    try {
      expect((await resumed.next()).id).toBe('11');
      expect(JSON.parse((await resumed.next()).data)).toMatch(/^second /);
    } finally {
      resumed.close();
    }
  });

  it("keeps a canceled job's stream open for the lines its runner sends after the cancel", async () => {
    const build = await runningBuild();
    await client.patchTrace(build.id, build.token, 0, Buffer.from('working\n'));
    const live = await openSse(`${t.url}/-/ui/api/jobs/${build.id}/trace/events`, { cookie });
    try {
      await live.until((event) => event.event === 'append');
      expect((await post(`/-/ui/api/jobs/${build.id}/cancel`)).status).toBe(200);
      // The runner learns of the cancel from its next PATCH's Build-Status, then sends its last lines.
      const reply = await client.patchTrace(build.id, build.token, 8, Buffer.from('ERROR: Job canceled\n'));
      expect(reply.status).toBe(202);
      const rest = await live.until((event) => event.event === 'end');
      expect(rest.map((event) => event.event)).toEqual(['append', 'end']);
      expect(JSON.parse(rest[0]!.data)).toBe('ERROR: Job canceled\n');
    } finally {
      live.close();
    }
  });

  it('starts a new viewer of a long log at a line near its end, not at its start', async () => {
    const build = await runningBuild();
    const line = (n: number): string => `line ${String(n).padStart(8, '0')}\n`;
    const width = line(1).length;
    const lines = Math.ceil((3 * TAIL_BYTES) / width);
    const text = Array.from({ length: lines }, (_, i) => line(i + 1)).join('');
    await client.patchTrace(build.id, build.token, 0, Buffer.from(text));
    const live = await openSse(`${t.url}/-/ui/api/jobs/${build.id}/trace/events`, { cookie });
    try {
      const start = JSON.parse((await live.next()).data) as { offset: number; size: number };
      expect(start.size).toBe(text.length);
      expect(start.offset).toBeGreaterThanOrEqual(text.length - TAIL_BYTES);
      expect(start.offset % width).toBe(0);
      const appended = await live.until((event) => event.id === String(text.length));
      const shown = appended.map((event) => JSON.parse(event.data) as string).join('');
      expect(shown).toBe(text.slice(start.offset));
      expect(shown.endsWith(line(lines))).toBe(true);
    } finally {
      live.close();
    }
    await client.updateBuild(build.id, runnerToken, { state: 'success' });
  });

  it('downloads whole, or as one byte range', async () => {
    const build = await runningBuild();
    await client.patchTrace(build.id, build.token, 0, Buffer.from('0123456789abcdef\n'));
    const whole = await fetch(`${t.url}/-/ui/api/jobs/${build.id}/trace`, { headers: { cookie } });
    expect(whole.headers.get('content-disposition')).toBe(`attachment; filename="job-${build.id}.log"`);
    expect(await whole.text()).toBe('0123456789abcdef\n');
    const tail = await fetch(`${t.url}/-/ui/api/jobs/${build.id}/trace`, { headers: { cookie, range: 'bytes=-7' } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe('bytes 10-16/17');
    expect(await tail.text()).toBe('abcdef\n');
    const beyond = await fetch(`${t.url}/-/ui/api/jobs/${build.id}/trace`, { headers: { cookie, range: 'bytes=17-' } });
    expect(beyond.status).toBe(416);
    await client.updateBuild(build.id, runnerToken, { state: 'success' });
  });

  it('cuts streamed chunks only between whole UTF-8 characters', () => {
    const euro = Buffer.from('€'); // 3 bytes
    const text = Buffer.concat([Buffer.from('ab'), euro]);
    expect(wholeUtf8Length(text)).toBe(5);
    expect(wholeUtf8Length(text.subarray(0, 4))).toBe(2);
    expect(wholeUtf8Length(text.subarray(0, 3))).toBe(2);
    expect(wholeUtf8Length(Buffer.from('😀').subarray(0, 3))).toBe(0);
    expect(wholeUtf8Length(Buffer.from('plain'))).toBe(5);
  });
});
