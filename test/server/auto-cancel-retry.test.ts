/**
 * `workflow: auto_cancel` and `retry:` as GitLab applies them, on the reference server driven over raw
 * API v4 (the runner reports each failure's reason and exit code, as GitLab Runner does):
 * `on_new_commit` (conservative, interruptible, none; only pipelines of another commit of the ref, and
 * their child pipelines), `on_job_failure` (all, none), `retry: when` with GitLab's reasons,
 * `retry: exit_codes`, and the reasons GitLab never retries.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineView } from '../../src/server/index.js';
import { git } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { registerV4, requestJob, takeJob, updateJob } from './v4-http.js';

let t: TestServer;
let token: string;
beforeEach(async () => {
  t = await startTestServer();
  token = (await registerV4(t)).token;
});
afterEach(async () => {
  await t.close();
});

const statuses = (p: PipelineView): string[] => t.server.getPipeline(p.id)!.jobs.map((job) => `${job.name}:${job.status}`);
/** A new commit on the project's branch: GitLab auto-cancels only pipelines of other commits than the new one's. */
const commit = (): Promise<string> => git(t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'next']);

/** Takes the next job and ends it; `job` names which one is expected. */
async function finish(job: string, state: 'success' | 'failed', report: { failure_reason?: string; exit_code?: number } = {}): Promise<number> {
  const taken = await takeJob(t, token);
  expect(taken.job_info.name).toBe(job);
  expect((await updateJob(t, taken, { state, ...(state === 'failed' ? { failure_reason: 'script_failure', ...report } : {}) })).status).toBe(200);
  return taken.id;
}

describe('workflow: auto_cancel: on_new_commit', () => {
  const pipeline = (mode?: string): string =>
    `${mode ? `workflow:\n  auto_cancel:\n    on_new_commit: ${mode}\n` : ''}stages: [build, deploy]\nlint:\n  stage: build\n  interruptible: true\n  script: [x]\nunit:\n  stage: build\n  script: [x]\ndeploy:\n  stage: deploy\n  script: [x]\n`;

  it('conservative (the default): a newer commit cancels the older pipeline while none of its uninterruptible jobs has started', async () => {
    const older = await t.pipeline(pipeline());
    await takeJob(t, token); // lint, interruptible, runs
    await commit();
    await t.pipeline(pipeline());
    expect(statuses(older)).toEqual(['lint:canceled', 'unit:canceled', 'deploy:canceled']);
  });

  it('conservative: leaves the older pipeline alone once an uninterruptible job has started', async () => {
    const older = await t.pipeline(pipeline());
    await takeJob(t, token);
    await takeJob(t, token); // unit, not interruptible
    await commit();
    await t.pipeline(pipeline());
    expect(statuses(older)).toEqual(['lint:running', 'unit:running', 'deploy:created']);
  });

  it('interruptible: cancels only the interruptible jobs, whatever else has started', async () => {
    const older = await t.pipeline(pipeline('interruptible'));
    await takeJob(t, token);
    await takeJob(t, token);
    await commit();
    await t.pipeline(pipeline());
    expect(statuses(older)).toEqual(['lint:canceled', 'unit:running', 'deploy:created']);
  });

  it('none: cancels nothing; the older pipeline\'s setting decides, not the newer one\'s', async () => {
    const older = await t.pipeline(pipeline('none'));
    await commit();
    await t.pipeline(pipeline('conservative'));
    expect(statuses(older)).toEqual(['lint:pending', 'unit:pending', 'deploy:created']);
  });

  it('cancels nothing of a pipeline of the same commit, as GitLab compares the ref\'s head', async () => {
    const older = await t.pipeline(pipeline());
    await t.pipeline(pipeline());
    expect(statuses(older)).toEqual(['lint:pending', 'unit:pending', 'deploy:created']);
  });

  it('cancels the child pipeline of a canceled pipeline too', async () => {
    const files = { 'child.yml': 'inner:\n  interruptible: true\n  script: [x]\n' };
    for (const [name, text] of Object.entries(files)) await import('node:fs/promises').then((fs) => fs.writeFile(`${t.projectPath}/${name}`, text));
    await git(t.projectPath, ['add', '-A']);
    await git(t.projectPath, ['commit', '-q', '-m', 'child']);
    const older = await t.pipeline('spawn:\n  interruptible: true\n  trigger:\n    include: child.yml\n');
    const child = await waitForChild(older.id);
    expect(statuses(child)).toEqual(['inner:pending']);
    await commit();
    await t.pipeline('other:\n  script: [x]\n');
    expect(statuses(child)).toEqual(['inner:canceled']);
  });
});

async function waitForChild(parentId: number): Promise<PipelineView> {
  for (let i = 0; i < 400; i += 1) {
    const id = t.server.getPipeline(parentId)?.downstream?.[0]?.id;
    if (id !== undefined) return t.server.getPipeline(id)!;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no child pipeline');
}

describe('workflow: auto_cancel: on_job_failure', () => {
  const pipeline = (mode: string): string =>
    `workflow:\n  auto_cancel:\n    on_job_failure: ${mode}\nstages: [test, after]\nbroken:\n  stage: test\n  script: [x]\nslow:\n  stage: test\n  script: [x]\nallowed:\n  stage: test\n  allow_failure: true\n  script: [x]\nnext:\n  stage: after\n  when: always\n  script: [x]\n`;

  it('all: a job failing the pipeline cancels every other unfinished job; a failure that is allowed does not', async () => {
    const p = await t.pipeline(pipeline('all'));
    const running = await Promise.all([takeJob(t, token), takeJob(t, token), takeJob(t, token)]);
    const byName = Object.fromEntries(running.map((job) => [job.job_info.name, job]));
    await updateJob(t, byName.allowed!, { state: 'failed', failure_reason: 'script_failure', exit_code: 1 });
    expect(statuses(p)).toEqual(['broken:running', 'slow:running', 'allowed:failed', 'next:created']);
    await updateJob(t, byName.broken!, { state: 'failed', failure_reason: 'script_failure', exit_code: 1 });
    expect(statuses(p)).toEqual(['broken:failed', 'slow:canceled', 'allowed:failed', 'next:canceled']);
    expect(t.server.getPipeline(p.id)?.status).toBe('failed');
  });

  it('none (the default): the other jobs run on, and a when: always job after them', async () => {
    const p = await t.pipeline(pipeline('none'));
    await finish('broken', 'failed');
    expect(statuses(p)).toEqual(['broken:failed', 'slow:pending', 'allowed:pending', 'next:created']);
  });

  it('all: waits for the retries of a job with retry: before it cancels', async () => {
    const p = await t.pipeline('workflow:\n  auto_cancel:\n    on_job_failure: all\nflaky:\n  retry: 1\n  script: [x]\nslow:\n  script: [x]\n');
    const flaky = await takeJob(t, token);
    await updateJob(t, flaky, { state: 'failed', failure_reason: 'script_failure', exit_code: 1 });
    expect(statuses(p).sort()).toEqual(['flaky:pending', 'slow:pending']);
    const [first, second] = [await takeJob(t, token), await takeJob(t, token)];
    const again = first.job_info.name === 'flaky' ? first : second;
    await updateJob(t, again, { state: 'failed', failure_reason: 'script_failure', exit_code: 1 });
    expect(statuses(p).sort()).toEqual(['flaky:failed', 'slow:canceled']);
  });
});

describe('retry', () => {
  it('when: retries the reasons it names and no others', async () => {
    const p = await t.pipeline('j:\n  retry:\n    max: 2\n    when: [runner_system_failure, data_integrity_failure]\n  script: [x]\n');
    await finish('j', 'failed', { failure_reason: 'runner_system_failure' });
    await finish('j', 'failed', { failure_reason: 'data_integrity_failure' });
    expect(statuses(p)).toEqual(['j:pending']);
    await finish('j', 'failed', { failure_reason: 'runner_system_failure' });
    expect(statuses(p)).toEqual(['j:failed']);
    expect(t.server.getPipeline(p.id)?.retried).toHaveLength(2);

    const other = await t.pipeline('k:\n  retry:\n    max: 2\n    when: runner_system_failure\n  script: [x]\n');
    await finish('k', 'failed', { failure_reason: 'script_failure', exit_code: 1 });
    expect(statuses(other)).toEqual(['k:failed']);
  });

  it('exit_codes: alone, retries only those exit statuses; beside when, either', async () => {
    const codes = await t.pipeline('j:\n  retry:\n    max: 2\n    exit_codes: [137, 255]\n  script: [x]\n');
    await finish('j', 'failed', { exit_code: 137 });
    expect(statuses(codes)).toEqual(['j:pending']);
    await finish('j', 'failed', { exit_code: 1 });
    expect(statuses(codes)).toEqual(['j:failed']);

    const both = await t.pipeline('k:\n  retry:\n    max: 2\n    exit_codes: 3\n    when: runner_system_failure\n  script: [x]\n');
    await finish('k', 'failed', { failure_reason: 'runner_system_failure' });
    await finish('k', 'failed', { exit_code: 3 });
    expect(statuses(both)).toEqual(['k:pending']);
    await finish('k', 'success');
    expect(statuses(both)).toEqual(['k:success']);
  });

  it('never retries the failures GitLab never retries, even with when: always', async () => {
    const p = await t.pipeline('j:\n  retry: 2\n  script: [x]\n');
    await finish('j', 'failed', { failure_reason: 'missing_dependency_failure' });
    expect(statuses(p)).toEqual(['j:failed']);
    expect((await requestJob(t, token)).status).toBe(204);
  });
});
