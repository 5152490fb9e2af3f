/** Pipelines end to end through the admin API, driven by a raw-HTTP legacy runner. */
import { readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import type { PipelineView } from '../../src/server/index.js';
import { createGitRepo } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LegacyRunner } from './legacy-client.js';
import { raw } from './raw-http.js';

let t: TestServer;
let runner: LegacyRunner;
let zip: Buffer;
let zipDir: string;

beforeAll(async () => {
  zipDir = await mkdtemp(join(tmpdir(), 'ci-runner-lifecycle-'));
  await writeFile(join(zipDir, 'app.bin'), 'compiled\n');
  await execa('zip', ['-q', 'a.zip', 'app.bin'], { cwd: zipDir });
  zip = await readFile(join(zipDir, 'a.zip'));
});
afterAll(async () => {
  await rm(zipDir, { recursive: true, force: true });
});
beforeEach(async () => {
  t = await startTestServer();
  runner = new LegacyRunner(t.url, (await t.registerRunner()).token);
});
afterEach(async () => {
  await t.close();
});

function admin(method: string, path: string, json?: unknown) {
  return raw(t.url, method, `/admin/api${path}`, { headers: { 'private-token': t.server.adminToken }, ...(json !== undefined ? { json } : {}) });
}

async function createPipeline(config: string, variables?: Record<string, string>): Promise<PipelineView> {
  const response = await admin('POST', '/pipelines', { project: t.projectName, config, ...(variables ? { variables } : {}) });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as PipelineView;
}

async function pipelineStatus(id: number): Promise<PipelineView> {
  return JSON.parse((await admin('GET', `/pipelines/${id}`)).text) as PipelineView;
}

function statusOf(view: PipelineView, name: string): string | undefined {
  return view.jobs.find((job) => job.name === name)?.status;
}

async function next(): Promise<BuildPayload> {
  const build = await runner.poll();
  if (!build) throw new Error('expected a build');
  return build;
}

const FULL = `
stages: [build, test, deploy]
variables:
  GLOBAL_VAR: global
before_script:
  - echo before
build:
  stage: build
  script: [make]
  artifacts:
    paths: [out/]
    expire_in: 1 week
lint:
  stage: build
  script: [lint]
unit:
  stage: test
  script: [test]
  dependencies: [build]
  variables:
    JOB_VAR: job
flaky:
  stage: test
  script: [flaky]
  allow_failure: true
deploy:
  stage: deploy
  script: [deploy]
cleanup:
  stage: deploy
  script: [cleanup]
  when: on_failure
notify:
  stage: deploy
  script: [notify]
  when: always
`;

describe('pipeline lifecycle', () => {
  it('runs stages in order, passes artifacts through depends_on_builds, tolerates allow_failure', async () => {
    const created = await createPipeline(FULL, { SECRET_VAR: 's3cret' });
    expect(created.status).toBe('pending');
    expect(statusOf(created, 'build')).toBe('pending');
    expect(statusOf(created, 'unit')).toBe('created');

    const build = await next();
    expect(build.name).toBe('build');
    expect(build.commands).toBe('echo before\nmake');
    expect(build.options.artifacts).toEqual({ paths: ['out/'], expire_in: '1 week' });
    expect(build.repo_url).toBe(`${t.url.replace('http://', `http://gitlab-ci-token:${build.token}@`)}/group/project.git`);
    expect(build.before_sha).toMatch(/^0{40}$/);
    expect(build.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(build.allow_git_fetch).toBe(true);
    expect(build.timeout).toBe(3600);
    expect(build.credentials).toEqual([]);
    expect(build.depends_on_builds).toEqual([]);
    expect(build.variables).toContainEqual({ key: 'CI_BUILD_TOKEN', value: build.token, public: false });
    expect(build.variables).toContainEqual({ key: 'GLOBAL_VAR', value: 'global', public: true });
    expect(build.variables).toContainEqual({ key: 'SECRET_VAR', value: 's3cret', public: false });
    const lint = await next();
    expect(lint.name).toBe('lint');
    expect(await runner.poll()).toBeUndefined(); // the test stage waits for the build stage

    await runner.complete(build, 'success', zip);
    expect(await runner.poll()).toBeUndefined();
    await runner.complete(lint, 'success');

    const unit = await next();
    const flaky = await next();
    expect([unit.name, flaky.name]).toEqual(['unit', 'flaky']);
    expect(unit.options.dependencies).toEqual(['build']);
    expect(unit.variables).toContainEqual({ key: 'JOB_VAR', value: 'job', public: true });
    const deps = unit.depends_on_builds;
    expect(deps.map((d) => d.name)).toEqual(['build', 'lint']);
    expect(deps[0]).toMatchObject({ id: build.id, token: build.token, status: 'success', artifacts_file: { filename: 'artifacts.zip', size: zip.byteLength } });
    expect(deps[1]).not.toHaveProperty('artifacts_file');
    const downloaded = await runner.download(deps[0]!.id, deps[0]!.token);
    expect(downloaded.status).toBe(200);
    expect(downloaded.body.equals(zip)).toBe(true);

    await runner.complete(unit, 'success');
    await runner.complete(flaky, 'failed');
    const deploy = await next();
    const notify = await next();
    expect([deploy.name, notify.name]).toEqual(['deploy', 'notify']);
    expect(statusOf(await pipelineStatus(created.id), 'cleanup')).toBe('skipped');
    await runner.complete(deploy, 'success');
    await runner.complete(notify, 'success');
    const done = await pipelineStatus(created.id);
    expect(done.status).toBe('success');
    expect(statusOf(done, 'flaky')).toBe('failed');

    const trace = await admin('GET', `/jobs/${build.id}/trace`);
    expect(trace.text).toBe('running build\ndone: success\n');
    const artifacts = await admin('GET', `/jobs/${build.id}/artifacts`);
    expect(artifacts.body.equals(zip)).toBe(true);
    const job = JSON.parse((await admin('GET', `/jobs/${build.id}`)).text);
    expect(job).toMatchObject({ id: build.id, name: 'build', stage: 'build', status: 'success', trace_size: 28, artifacts: { filename: 'artifacts.zip', size: zip.byteLength } });
    expect(job.started_at).not.toBeNull();
    expect(job.finished_at).not.toBeNull();
  });

  it('skips on_success jobs after a failure, runs on_failure and always jobs, and fails the pipeline', async () => {
    const created = await createPipeline(FULL);
    await runner.complete(await next(), 'failed');
    await runner.complete(await next(), 'success');
    const view = await pipelineStatus(created.id);
    expect(statusOf(view, 'unit')).toBe('skipped');
    expect(statusOf(view, 'flaky')).toBe('skipped');
    expect(statusOf(view, 'deploy')).toBe('skipped');
    const names = [(await next()).name, (await next()).name].sort();
    expect(names).toEqual(['cleanup', 'notify']);
    expect((await pipelineStatus(created.id)).status).toBe('running');
    const failed = JSON.parse((await admin('GET', '/jobs?status=failed')).text) as Array<{ name: string }>;
    expect(failed.map((j) => j.name)).toEqual(['build']);
  });

  it('cancels a running job through the admin API: the runner sees Build-Status canceled, then 404, later stages skip', async () => {
    const created = await createPipeline('stages: [a, b]\nfirst:\n  stage: a\n  script: [x]\nsecond:\n  stage: b\n  script: [y]\n');
    const first = await next();
    expect(await runner.update(first, 'running')).toBe(200);
    const canceled = await admin('POST', `/jobs/${first.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(JSON.parse(canceled.text)).toMatchObject({ id: first.id, status: 'canceled' });
    const part = await runner.patch(first, 0, 'still running\n');
    expect(part).toMatchObject({ status: 202, buildStatus: 'canceled' });
    expect(await runner.update(first, 'failed', 'still running\nERROR: Job failed: canceled\n')).toBe(404);
    const view = await pipelineStatus(created.id);
    expect(view.status).toBe('canceled');
    expect(statusOf(view, 'second')).toBe('skipped');
    expect(await runner.poll()).toBeUndefined();
  });

  it('cancels a pending job before any runner takes it', async () => {
    const created = await createPipeline('solo:\n  script: [x]\n');
    const id = created.jobs[0]!.id;
    expect(JSON.parse((await admin('POST', `/jobs/${id}/cancel`)).text).status).toBe('canceled');
    expect(await runner.poll()).toBeUndefined();
  });

  it('leaves manual jobs waiting without blocking later stages', async () => {
    const created = await createPipeline('stages: [a, b]\nmanual:\n  stage: a\n  when: manual\n  script: [x]\nafter:\n  stage: b\n  script: [y]\n');
    expect(statusOf(created, 'manual')).toBe('manual');
    expect(statusOf(created, 'after')).toBe('pending');
  });

  it('refuses a pipeline with an error, naming the job and key, and queues nothing', async () => {
    const response = await admin('POST', '/pipelines', { project: t.projectName, config: 'broken:\n  script: [x]\n  when: sometimes\n' });
    expect(response.status).toBe(400);
    const message = (JSON.parse(response.text) as { message: string }).message;
    expect(message).toContain('broken');
    expect(message).toContain('when');
    expect(t.server.listJobs()).toEqual([]);
    await expect(t.server.createPipeline({ project: t.projectName, config: 'x: [' })).rejects.toMatchObject({ code: 'PIPELINE_INVALID' });
  });

  it('answers 404 for an unknown project and 400 for an unknown ref', async () => {
    expect((await admin('POST', '/pipelines', { project: 'no/such', config: 'a:\n  script: [x]\n' })).status).toBe(404);
    expect((await admin('POST', '/pipelines', { project: t.projectName, ref: 'nope', config: 'a:\n  script: [x]\n' })).status).toBe(400);
    expect((await admin('POST', '/pipelines', { project: t.projectName, config: 'a:\n  script: [x]\n', variables: { A: { b: 1 } } })).status).toBe(400);
    expect((await admin('POST', '/pipelines', { project: t.projectName, config: 'a:\n  script: [x]\n', variables: { 'bad name': 'x' } })).status).toBe(400);
    expect((await admin('POST', '/pipelines', { project: t.projectName })).status).toBe(400);
  });

  it('guards the admin API with PRIVATE-TOKEN: 401 missing, 403 wrong', async () => {
    expect((await raw(t.url, 'GET', '/admin/api/jobs')).status).toBe(401);
    expect((await raw(t.url, 'GET', '/admin/api/jobs', { headers: { 'private-token': 'wrong' } })).status).toBe(403);
    expect((await admin('GET', '/jobs/424242')).status).toBe(404);
    expect((await admin('GET', '/pipelines/424242')).status).toBe(404);
  });
});

describe('git over smart HTTP', () => {
  const gitEnv = { GIT_TERMINAL_PROMPT: '0' };
  const lsRemote = (url: string) => execa('git', ['ls-remote', url], { reject: false, env: gitEnv });

  it("lets a running build's token read every project on the server, read-only; unknown and finished builds' tokens get 401", async () => {
    // A second project, as a submodule would live in: the build token of group/project reads it too.
    const libPath = await createGitRepo({ 'lib.txt': 'library\n' });
    try {
      t.server.addProject('group/lib', libPath);
      await createPipeline('solo:\n  script: [x]\n');
      const build = await next();
      const libUrl = build.repo_url.replace('/group/project.git', '/group/lib.git');
      const own = await lsRemote(build.repo_url);
      expect(own.exitCode).toBe(0);
      expect(own.stdout).toContain(build.sha);
      const other = await lsRemote(libUrl);
      expect(other.exitCode).toBe(0);
      expect(other.stdout).toContain('refs/heads/main');

      const lib = new URL(libUrl);
      const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      const refs = (headers: Record<string, string>, service = 'git-upload-pack') =>
        raw(t.url, 'GET', `${lib.pathname}/info/refs?service=${service}`, { headers });
      expect((await refs({})).status).toBe(401);
      expect((await refs({ authorization: basic('gitlab-ci-token', 'wrongtokenwrongtoken') })).status).toBe(401);
      expect((await refs({ authorization: basic('someone', build.token) })).status).toBe(401);
      expect((await refs({ authorization: basic('gitlab-ci-token', build.token) })).status).toBe(200);
      // Pushing stays refused, to the project's own repository and to others.
      expect((await refs({ authorization: basic('gitlab-ci-token', build.token) }, 'git-receive-pack')).status).toBe(403);

      await runner.complete(build, 'success');
      expect((await lsRemote(build.repo_url)).exitCode).not.toBe(0);
      expect((await lsRemote(libUrl)).exitCode).not.toBe(0);
      expect((await refs({ authorization: basic('gitlab-ci-token', build.token) })).status).toBe(401);
    } finally {
      await rm(libPath, { recursive: true, force: true });
    }
  });
});
