/** docs/protocol-v4.md §3–§5 over raw HTTP: jobs/request (long polling, features), the job document, PUT. */
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from './raw-http.js';
import { R14_FEATURES, registerV4, requestJob, takeJob, updateJob, patchTrace } from './v4-http.js';

let t: TestServer;
let token: string;
beforeEach(async () => {
  t = await startTestServer();
  token = (await registerV4(t)).token;
});
afterEach(async () => {
  await t.close();
});

const ONE_JOB = 'a:\n  script: [echo a]\n';

describe('V6 POST /jobs/request', () => {
  it('answers 403 for an unknown runner token', async () => {
    expect((await requestJob(t, 'nope')).status).toBe(403);
  });

  it('answers 204 with X-GitLab-Last-Update, and the same value when nothing changed', async () => {
    const first = await requestJob(t, token);
    expect(first.status).toBe(204);
    const value = first.headers['x-gitlab-last-update'] as string;
    expect(value).toMatch(/^[0-9a-f]{32}$/);
    const again = await requestJob(t, token, { last_update: value });
    expect(again.status).toBe(204);
    expect(again.headers['x-gitlab-last-update']).toBe(value);
    expect(again.headers['gitlab-ci-builds-polling']).toBeUndefined();
  });

  it('answers 201 with the job as application/json and moves it to running', async () => {
    const pipeline = await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    expect(job.id).toBe(pipeline.jobs[0]?.id);
    expect(t.server.getJob(job.id)?.status).toBe('running');
    expect((await requestJob(t, token)).status).toBe(204);
  });

  it('answers a paused runner 204, not 403', async () => {
    const { id, token: paused } = await registerV4(t, { active: false });
    await t.pipeline(ONE_JOB);
    const response = await requestJob(t, paused);
    expect(response.status).toBe(204);
    expect(response.headers['x-gitlab-last-update']).toBeDefined();
    expect((await raw(t.url, 'POST', `/admin/api/runners/${id}/resume`, { headers: { 'private-token': t.server.adminToken } })).status).toBe(200);
    expect((await requestJob(t, paused)).status).toBe(201);
  });

  it('drops a job that needs a feature the runner asking lacks as runner_unsupported, as GitLab does, and hands out the next one', async () => {
    const p = await t.pipeline('a:\n  script: [x]\n  artifacts:\n    reports:\n      dotenv: a.env\nb:\n  script: [x]\n  release:\n    tag_name: v1\n    description: d\nc:\n  script: [x]\n');
    const lacking = { info: { features: { ...R14_FEATURES, upload_multiple_artifacts: false, multi_build_steps: false } } };
    const taken = await takeJob(t, token, lacking);
    expect(taken.job_info.name).toBe('c');
    for (const name of ['a', 'b']) {
      const job = t.server.getJob(p.jobs.find((j) => j.name === name)!.id);
      expect(job?.status, name).toBe('failed');
      expect(job?.failure_reason, name).toBe('runner_unsupported');
    }
  });

  it('gives a runner that announces multi_build_steps a release job with GitLab\'s release step between script and after_script', async () => {
    await t.pipeline('r:\n  script: [echo build]\n  after_script: [echo after]\n  release:\n    tag_name: v$CI_PIPELINE_IID\n    name: Release $CI_COMMIT_SHORT_SHA\n    description: first\n    milestones: [m1, m2]\n    assets:\n      links:\n        - name: bin\n          url: https://example.com/bin\n');
    const job = await takeJob(t, token, { info: { features: { ...R14_FEATURES, multi_build_steps: true } } });
    expect(job.steps.map((step: { name: string }) => step.name)).toEqual(['script', 'release', 'after_script']);
    const [script] = job.steps[1]!.script as string[];
    expect(job.steps[1]).toMatchObject({ when: 'on_success', allow_failure: false });
    expect(script).toContain('if command -v glab &> /dev/null; then');
    expect(script).toContain('glab release create -R $CI_PROJECT_PATH "v$CI_PIPELINE_IID" --assets-links "[{\\"name\\":\\"bin\\",\\"url\\":\\"https://example.com/bin\\"}]" --milestone "m1,m2" --name "Release $CI_COMMIT_SHORT_SHA" --experimental-notes-text-or-file "first" --ref "$CI_COMMIT_SHA" --no-update --no-close-milestone');
    expect(script).toContain('release-cli create --name "Release $CI_COMMIT_SHORT_SHA" --description "first" --tag-name "v$CI_PIPELINE_IID" --milestone "m1" --milestone "m2" --assets-link "{\\"name\\":\\"bin\\",\\"url\\":\\"https://example.com/bin\\"}"');
  });

  it('gives a ref_protected runner jobs of the default branch only', async () => {
    const guarded = await registerV4(t, { access_level: 'ref_protected' });
    await t.server.createPipeline({ project: t.projectName, config: ONE_JOB, ref: 'main' });
    expect((await takeJob(t, guarded.token)).git_info.protected).toBe(true);
  });
});

describe('V6 long polling (Workhorse)', () => {
  it('holds a request whose last_update is current until a job is queued, then answers 201', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 60_000 });
    token = (await registerV4(t)).token;
    const first = await requestJob(t, token);
    expect(first.headers['gitlab-ci-builds-polling']).toBe('yes');
    let settled = false;
    const held = requestJob(t, token, { last_update: first.headers['x-gitlab-last-update'] }).finally(() => {
      settled = true;
    });
    // A request without last_update (a runner's first) is answered at once, even now.
    expect((await requestJob(t, token)).status).toBe(204);
    expect(settled).toBe(false);
    const pipeline = await t.pipeline(ONE_JOB);
    const response = await held;
    expect(response.status).toBe(201);
    expect(JSON.parse(response.text).id).toBe(pipeline.jobs[0]?.id);
  });

  it('answers a stale last_update at once', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 60_000 });
    token = (await registerV4(t)).token;
    const response = await requestJob(t, token, { last_update: 'an-old-value' });
    expect(response.status).toBe(204);
    expect(response.headers['x-gitlab-last-update']).not.toBe('an-old-value');
  });

  it('answers 204 with the current value when the long-poll time ends', async () => {
    await t.close();
    t = await startTestServer({ longPollMs: 200 });
    token = (await registerV4(t)).token;
    const value = (await requestJob(t, token)).headers['x-gitlab-last-update'];
    const response = await requestJob(t, token, { last_update: value });
    expect(response.status).toBe(204);
    expect(response.headers['x-gitlab-last-update']).toBe(value);
  });
});

describe('the job document (§6)', () => {
  it('has steps, git_info, runner_info, variables with masked/file/raw, artifacts[], cache[], features', async () => {
    await t.server.createPipeline({
      project: t.projectName,
      config: [
        'variables:',
        '  LITERAL:',
        '    value: "keep $THIS"',
        '    expand: false',
        'a:',
        '  before_script: [echo before]',
        '  script: [echo main]',
        '  after_script: [echo after]',
        '  timeout: 2h',
        '  image: { name: alpine, entrypoint: [""], pull_policy: if-not-present }',
        '  services: [postgres, { name: "redis:7", alias: cache, entrypoint: [""], command: [redis-server, --port, "6380"], pull_policy: [always, if-not-present] }]',
        '  cache: { key: k, paths: [c/], policy: pull, fallback_keys: [main] }',
        '  artifacts: { name: out, paths: [o/], exclude: [o/*.tmp], expire_in: 1 week, reports: { dotenv: a.env } }',
        '',
      ].join('\n'),
      variables: { SECRET: 'hunter2hunter2' },
      variableFlags: { KEYFILE: { file: true, masked: false } },
    });
    // cache:fallback_keys needs a runner that announces fallback_cache_keys (GitLab Runner ≥ 16).
    const job = await takeJob(t, token, { info: { features: { ...R14_FEATURES, fallback_cache_keys: true } } });
    expect(job.steps).toEqual([
      { name: 'script', script: ['echo before', 'echo main'], timeout: 7200, when: 'on_success', allow_failure: false },
      { name: 'after_script', script: ['echo after'], timeout: 7200, when: 'always', allow_failure: true },
    ]);
    expect(job.runner_info.timeout).toBe(7200);
    expect(job.git_info).toMatchObject({ ref: 'main', ref_type: 'branch', depth: 20, refspecs: ['+refs/heads/main:refs/remotes/origin/main'] });
    expect(job.git_info.repo_url).toContain(`gitlab-ci-token:${job.token}@`);
    expect(job.image).toEqual({ name: 'alpine', entrypoint: [''], ports: [], pull_policy: ['if-not-present'] });
    expect(job.services).toEqual([
      { name: 'postgres', ports: [] },
      { name: 'redis:7', alias: 'cache', entrypoint: [''], command: ['redis-server', '--port', '6380'], ports: [], pull_policy: ['always', 'if-not-present'] },
    ]);
    expect(job.cache).toEqual([{ key: 'k', untracked: false, paths: ['c/'], policy: 'pull', when: 'on_success', fallback_keys: ['main'] }]);
    expect(job.artifacts).toEqual([
      { name: 'out', untracked: false, paths: ['o/'], exclude: ['o/*.tmp'], when: 'on_success', expire_in: '1 week', artifact_type: 'archive', artifact_format: 'zip' },
      { name: '.env', untracked: false, paths: ['a.env'], when: 'always', expire_in: '1 week', artifact_type: 'dotenv', artifact_format: 'gzip' },
    ]);
    const variable = (key: string) => job.variables.find((v) => v.key === key);
    expect(variable('CI_JOB_TOKEN')).toEqual({ key: 'CI_JOB_TOKEN', value: job.token, public: false, masked: true });
    expect(variable('SECRET')).toEqual({ key: 'SECRET', value: 'hunter2hunter2', public: false, masked: true });
    expect(variable('LITERAL')).toEqual({ key: 'LITERAL', value: 'keep $THIS', public: true, masked: false, raw: true });
    expect(variable('CI_JOB_ID')?.value).toBe(String(job.id));
    expect(variable('CI_API_V4_URL')?.value).toBe(`${t.url}/api/v4`);
    expect(variable('CI_COMMIT_SHA')?.value).toBe(job.git_info.sha);
    expect(job.variables.every((v) => !('file' in v) || v.file === true)).toBe(true);
    expect(job.features.failure_reasons).toContain('script_failure');
    expect(job.features.token_mask_prefixes).toEqual(['glpat-']);
    expect(job.credentials).toEqual([]);
  });

  it('sends hooks, the image\'s and services\' executor_opts and a service\'s own variables as GitLab does', async () => {
    await t.server.createPipeline({
      project: t.projectName,
      config: [
        'j:',
        '  hooks: { pre_get_sources_script: [echo pre] }',
        '  image: { name: alpine, docker: { user: "1000", platform: linux/amd64 }, kubernetes: { user: "1000:1000" } }',
        '  services: [{ name: "postgres:16", alias: "db,pg", variables: { POSTGRES_PASSWORD: pw }, docker: { user: postgres } }]',
        '  script: [x]',
        '',
      ].join('\n'),
    });
    const job = await takeJob(t, token) as unknown as Record<string, unknown>;
    expect(job.hooks).toEqual([{ name: 'pre_get_sources_script', script: ['echo pre'] }]);
    expect(job.image).toEqual({ name: 'alpine', ports: [], executor_opts: { docker: { user: '1000', platform: 'linux/amd64' }, kubernetes: { user: '1000:1000' } } });
    expect(job.services).toEqual([{ name: 'postgres:16', alias: 'db,pg', ports: [], variables: [{ key: 'POSTGRES_PASSWORD', value: 'pw' }], executor_opts: { docker: { user: 'postgres' } } }]);
  });

  it('sends file variables, doubles a raw value for a runner without raw_variables, and caps the timeout by maximum_timeout', async () => {
    const capped = await registerV4(t, { maximum_timeout: 600 });
    await t.server.createPipeline({
      project: t.projectName,
      config: 'variables:\n  LITERAL: { value: "a$b", expand: false }\na:\n  script: [x]\n',
      variables: { KEYFILE: 'line\n' },
      variableFlags: { KEYFILE: { file: true, masked: false } },
    });
    const job = await takeJob(t, capped.token, { info: { features: { ...R14_FEATURES, raw_variables: false } } });
    expect(job.runner_info.timeout).toBe(600);
    expect(job.variables.find((v) => v.key === 'KEYFILE')).toEqual({ key: 'KEYFILE', value: 'line\n', public: false, masked: false, file: true });
    expect(job.variables.find((v) => v.key === 'LITERAL')).toEqual({ key: 'LITERAL', value: 'a$$b', public: true, masked: false });
  });

  it('sends full refspecs for GIT_DEPTH 0 and a tag ref for a tag pipeline', async () => {
    await t.pipeline('variables:\n  GIT_DEPTH: "0"\na:\n  script: [x]\n');
    const job = await takeJob(t, token);
    expect(job.git_info.depth).toBe(0);
    expect(job.git_info.refspecs).toEqual(['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*']);
    await execa('git', ['-C', t.projectPath, 'tag', 'v1.0']);
    await t.server.createPipeline({ project: t.projectName, config: ONE_JOB, ref: 'v1.0' });
    const tagged = await takeJob(t, token);
    expect(tagged.git_info).toMatchObject({ ref: 'v1.0', ref_type: 'tag', protected: false, refspecs: ['+refs/tags/v1.0:refs/tags/v1.0'] });
  });

  it('lists dependencies with the running job\'s token and artifacts_file when they have artifacts', async () => {
    await t.pipeline('stages: [b, t]\nbuild:\n  stage: b\n  script: [x]\nlint:\n  stage: b\n  script: [x]\ntest:\n  stage: t\n  script: [x]\n  dependencies: [build]\n');
    for (let i = 0; i < 2; i++) {
      const job = await takeJob(t, token);
      expect((await updateJob(t, job, { state: 'success' })).status).toBe(200);
    }
    const test = await takeJob(t, token);
    expect(test.dependencies).toEqual([{ id: expect.any(Number), name: 'build', token: test.token }]);
  });
});

describe('V7 PUT /jobs/:id', () => {
  it('answers a keep-alive 200 with Job-Status and the update interval', async () => {
    await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    const response = await updateJob(t, job, { state: 'running', output: { checksum: 'crc32:00000000', bytesize: 0 } });
    expect(response.status).toBe(200);
    expect(response.headers['job-status']).toBe('running');
    expect(response.headers['x-gitlab-trace-update-interval']).toBe('1');
    expect(t.server.getJob(job.id)?.status).toBe('running');
  });

  it('answers 403 without Job-Status for an unknown job or a wrong token (never 404), with it once the job is done', async () => {
    await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    for (const response of [await updateJob(t, { id: 999_999, token: job.token }, { state: 'running' }), await updateJob(t, { id: job.id, token: 'wrong' }, { state: 'running' })]) {
      expect(response.status).toBe(403);
      expect(response.headers['job-status']).toBeUndefined();
    }
    expect((await updateJob(t, job, { state: 'success' })).status).toBe(200);
    const late = await updateJob(t, job, { state: 'success' });
    expect(late.status).toBe(403);
    expect(late.headers['job-status']).toBe('success');
  });

  it('takes the job token from JOB-TOKEN too', async () => {
    await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    const response = await raw(t.url, 'PUT', `/api/v4/jobs/${job.id}`, { json: { state: 'running' }, headers: { 'job-token': job.token } });
    expect(response.status).toBe(200);
  });

  it('answers 400 for an unknown state or an exit_code that is not an integer', async () => {
    await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    expect((await updateJob(t, job, { state: 'pending' })).status).toBe(400);
    expect((await updateJob(t, job, {})).status).toBe(400);
    expect((await updateJob(t, job, { state: 'failed', exit_code: 'one' })).status).toBe(400);
    expect(t.server.getJob(job.id)?.status).toBe('running');
  });

  it('stores failure_reason and exit_code; an unknown reason becomes unknown_failure', async () => {
    await t.pipeline('a:\n  script: [x]\nb:\n  script: [x]\n');
    const a = await takeJob(t, token);
    const b = await takeJob(t, token);
    expect((await updateJob(t, a, { state: 'failed', failure_reason: 'script_failure', exit_code: 3 })).status).toBe(200);
    expect(t.server.getJob(a.id)).toMatchObject({ status: 'failed', failure_reason: 'script_failure', exit_code: 3 });
    const done = await updateJob(t, b, { state: 'failed', failure_reason: 'cosmic_rays' });
    expect(done.headers['job-status']).toBe('failed');
    expect(t.server.getJob(b.id)).toMatchObject({ status: 'failed', failure_reason: 'unknown_failure' });
  });

  it('lists and stores the failure reasons GitLab 17-19 takes from runners (runner_interrupted, runner_configuration_error, runner_external_dependency_failure)', async () => {
    const reasons = ['runner_interrupted', 'runner_configuration_error', 'runner_external_dependency_failure'];
    await t.pipeline(reasons.map((name) => `${name}:\n  script: [x]\n`).join(''));
    for (let i = 0; i < reasons.length; i += 1) {
      const job = await takeJob(t, token);
      expect(job.features.failure_reasons).toEqual(expect.arrayContaining(reasons));
      expect((await updateJob(t, job, { state: 'failed', failure_reason: String(job.job_info.name) })).status).toBe(200);
      expect(t.server.getJob(job.id)).toMatchObject({ status: 'failed', failure_reason: String(job.job_info.name) });
    }
  });

  it('uses exit_code for allow_failure: exit_codes', async () => {
    await t.pipeline('a:\n  script: [x]\n  allow_failure:\n    exit_codes: [42]\n');
    const job = await takeJob(t, token);
    await updateJob(t, job, { state: 'failed', failure_reason: 'script_failure', exit_code: 42 });
    expect(t.server.getJob(job.id)).toMatchObject({ status: 'failed', allow_failure: true });
  });

  it('answers the final update 202 with a back-off until the trace the runner reports is stored, then 200', async () => {
    await t.pipeline(ONE_JOB);
    const job = await takeJob(t, token);
    expect((await patchTrace(t, job, 0, 'hello ')).status).toBe(202);
    const final = { state: 'success', checksum: 'crc32:af083b2d', output: { checksum: 'crc32:af083b2d', bytesize: 12 } };
    const early = await updateJob(t, job, final);
    expect(early.status).toBe(202);
    expect(early.headers['x-gitlab-trace-update-interval']).toBe('1');
    expect(early.headers['retry-after']).toBe('1');
    expect(early.headers['job-status']).toBe('running');
    const second = await updateJob(t, job, final);
    expect(second.headers['x-gitlab-trace-update-interval']).toBe('2');
    expect(t.server.getJob(job.id)?.status).toBe('running');
    expect((await patchTrace(t, job, 6, 'world\n')).status).toBe(202);
    const done = await updateJob(t, job, final);
    expect(done.status).toBe(200);
    expect(done.headers['job-status']).toBe('success');
    expect(t.server.getJob(job.id)?.status).toBe('success');
  });
});
