import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/git.js';
import { plannedJobs } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from './raw-http.js';

let t: TestServer;

const FILES = {
  'README.md': '# project\n',
  'Dockerfile': 'FROM alpine\n',
  'ci/templates.yml': '.build:\n  stage: build\n  script: [make]\n  variables: { FROM_TEMPLATE: "yes" }\n',
  'ci/deploy.yml': 'include: ci/templates.yml\ndeploy:\n  stage: deploy\n  script: [deploy]\n  rules:\n    - if: $CI_COMMIT_TAG\n',
};

const PIPELINE = `
include:
  - local: ci/deploy.yml
build:
  extends: .build
docs:
  script: [mkdocs build]
  rules:
    - changes: [docs/**/*]
code:
  script: [npm test]
  rules:
    - changes: [src/**/*]
container:
  script: [docker build .]
  rules:
    - exists: [Dockerfile]
      when: manual
`;

beforeAll(async () => {
  t = await startTestServer({ files: FILES });
  // A second commit that only touches docs: `changes` compares with the first.
  await mkdir(join(t.projectPath, 'docs'), { recursive: true });
  await writeFile(join(t.projectPath, 'docs', 'guide.md'), '# guide\n');
  await git(t.projectPath, ['add', '-A']);
  await git(t.projectPath, ['commit', '-q', '-m', 'docs: add a guide']);
  await git(t.projectPath, ['tag', 'v1.0']);
}, 60_000);
afterAll(async () => {
  await t.close();
});

const admin = () => ({ headers: { 'private-token': t.server.adminToken } });

async function post(body: Record<string, unknown>) {
  const response = await raw(t.url, 'POST', '/admin/api/pipelines', { ...admin(), json: { project: t.projectName, ...body } });
  return { status: response.status, body: JSON.parse(response.text) as Record<string, unknown> };
}

describe('the reference server runs the engine against the project\'s git', () => {
  it('creates only the jobs the rules choose, reading includes and files from the commit, and shows why', async () => {
    const created = await post({ config: PIPELINE, ref: 'main' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      source: 'push',
      jobs: [
        { name: 'build', stage: 'build', when: 'on_success', rule: 'default (only: branches, tags)' },
        { name: 'docs', stage: 'test', when: 'on_success', rule: 'rules:0 (changes: docs/**/*)' },
        { name: 'container', stage: 'test', when: 'manual', allow_failure: false, rule: 'rules:0 (exists: Dockerfile; when: manual)' },
      ],
      excluded: [
        { name: 'deploy', stage: 'deploy', rule: 'no rule matched' },
        { name: 'code', stage: 'test', rule: 'no rule matched' },
      ],
    });
    const shown = await raw(t.url, 'GET', `/admin/api/pipelines/${String(created.body.id)}`, admin());
    expect(JSON.parse(shown.text)).toEqual(created.body);
  });

  // Jobs of included files come first: they are merged under the including file.
  it('runs the tag\'s jobs for a tag, and every changes rule for a web pipeline', async () => {
    const tagged = await post({ config: PIPELINE, ref: 'v1.0' });
    expect((tagged.body.jobs as Array<{ name: string }>).map((job) => job.name)).toEqual(['deploy', 'build', 'docs', 'container']);
    const web = await post({ config: PIPELINE, ref: 'main', source: 'web' });
    expect(web.body.source).toBe('web');
    expect((web.body.jobs as Array<{ name: string }>).map((job) => job.name)).toEqual(['build', 'docs', 'code', 'container']);
  });

  it('creates nothing when workflow rules or job rules leave nothing to run', async () => {
    const filtered = await post({ config: 'workflow:\n  rules:\n    - if: $CI_PIPELINE_SOURCE == "schedule"\nj:\n  script: x\n' });
    expect(filtered.status).toBe(400);
    expect(filtered.body.message).toContain('filtered out by workflow: rules (no workflow rule matched)');
    const empty = await post({ config: 'j:\n  script: x\n  only: [tags]\n' });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toContain('no job runs for main (source push)');
    const before = t.server.listJobs().length;
    await post({ config: 'j:\n  script: x\n  only: [tags]\n' });
    expect(t.server.listJobs().length).toBe(before);
  });

  it('answers an invalid file with every problem, each with its job and key', async () => {
    const refused = await post({ config: 'a:\n  extends: .missing\nb:\n  script: x\n  rules: [{ if: "$X = 1" }]\n' });
    expect(refused.status).toBe(400);
    expect(refused.body.problems).toEqual([
      { message: "jobs:a extends '.missing', which is not a job or hidden job (.name) of this pipeline", job: 'a', key: 'extends' },
      { message: expect.stringContaining("jobs:b rules:0:if '$X = 1' is not a valid expression"), job: 'b', key: 'rules:0:if' },
    ]);
  });

  it('lets an in-process caller narrow the jobs the rules chose', async () => {
    let seen: string[] = [];
    const pipeline = await t.server.createPipeline({
      project: t.projectName,
      config: PIPELINE,
      filterJobs: (spec) => {
        seen = spec.jobs.map((job) => job.name);
        return { ...spec, jobs: spec.jobs.filter((job) => job.name === 'docs') };
      },
    });
    expect(seen).toEqual(['build', 'docs', 'container']);
    expect(pipeline.jobs.map((job) => job.name)).toEqual(['docs']);
  });

  it('drops the needs on jobs an in-process caller left out, keeping those on jobs it kept', async () => {
    const pipeline = await t.server.createPipeline({
      project: t.projectName,
      config: 'stages: [build, test]\nbuild: { stage: build, script: [make] }\nlint: { stage: build, script: [lint] }\nunit: { stage: test, needs: [build, lint], script: [test] }\n',
      filterJobs: (spec) => ({ ...spec, jobs: spec.jobs.filter((job) => job.name !== 'build') }),
    });
    expect(pipeline.jobs.map((job) => [job.name, job.status, job.needs?.map((need) => need.job)])).toEqual([
      ['lint', 'pending', undefined],
      ['unit', 'created', ['lint']],
    ]);
  });

  it('refuses an unknown source', async () => {
    const refused = await post({ config: 'j:\n  script: x\n', source: 'carrier-pigeon' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('"source" must be one of push, web, api');
  });

  it('plans without creating anything', async () => {
    const before = t.server.listJobs().length;
    const preview = await t.server.planPipeline({ project: t.projectName, config: PIPELINE });
    expect(preview.ref).toBe('main');
    expect(preview.plan.outcomes.map((outcome) => [outcome.name, outcome.included])).toEqual([
      ['deploy', false],
      ['build', true],
      ['docs', true],
      ['code', false],
      ['container', true],
    ]);
    expect(t.server.listJobs().length).toBe(before);
    expect(plannedJobs(preview.plan).map((row) => [row.name, row.stage, row.when, row.job?.commands])).toEqual([
      ['deploy', 'deploy', 'never', undefined],
      ['build', 'build', 'on_success', ['make']],
      ['docs', 'test', 'on_success', ['mkdocs build']],
      ['code', 'test', 'never', undefined],
      ['container', 'test', 'manual', ['docker build .']],
    ]);
  });
});
