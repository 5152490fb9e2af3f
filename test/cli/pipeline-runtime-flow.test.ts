/** needs (DAG), when (on_failure, always, manual, delayed) and retry, end to end (see pipeline-runtime-rig.ts). */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobView } from '../../src/server/index.js';
import { startDaemon } from './daemon.js';
import { waitUntil } from './helpers.js';
import { time, useRuntimeRig } from './pipeline-runtime-rig.js';

const rig = useRuntimeRig();
const { runOnce, admin, pipeline, jobNamed, trace, drain } = rig;

describe('needs (DAG)', () => {
  it('starts a job as soon as what it needs is done, regardless of stages, and passes artifacts through needs', async () => {
    const config = join(rig.dirs.root, 'dag.toml');
    await writeFile(config, `concurrent = 4\ncheck_interval = 1\n[[runners]]\n  name = "dag"\n  url = "${rig.t.url}"\n  token = "${rig.token}"\n  builds_dir = "${rig.dirs.builds}-dag"\n  cache_dir = "${rig.dirs.cache}"\n`);
    const p = await rig.t.pipeline(`
stages: [build, test, deploy]
quick:
  stage: build
  script: [sleep 1, echo quick > quick.txt]
  artifacts: { paths: [quick.txt] }
slow:
  stage: build
  script: [sleep 10, echo slow > slow.txt]
  artifacts: { paths: [slow.txt] }
after-quick:
  stage: test
  needs: [quick]
  script: [test "$(cat quick.txt)" = quick, test ! -f slow.txt]
no-artifacts:
  stage: test
  needs: [{ job: quick, artifacts: false }]
  script: [test ! -f quick.txt]
staged:
  stage: test
  script: [test -f quick.txt, test -f slow.txt]
at-once:
  stage: deploy
  needs: []
  script: [echo first]
`);
    expect(p.jobs.find((job) => job.name === 'after-quick')?.needs).toEqual([{ job: 'quick', artifacts: true, optional: false }]);
    expect(p.jobs.find((job) => job.name === 'staged')?.needs).toBeUndefined();
    expect(p.jobs.find((job) => job.name === 'at-once')?.status).toBe('pending');
    const daemon = startDaemon(config);
    try {
      await waitUntil(() => ['success', 'failed'].includes(pipeline(p.id).status), 90_000, 'DAG pipeline finished');
    } finally {
      await daemon.stop();
    }
    const job = (name: string) => jobNamed(p, name);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`), daemon.output()).toEqual([
      'quick:success', 'slow:success', 'after-quick:success', 'no-artifacts:success', 'staged:success', 'at-once:success',
    ]);
    // after-quick and no-artifacts ran inside slow's run, after quick; staged waited for all of build.
    expect(time(job('after-quick').started_at)).toBeGreaterThanOrEqual(time(job('quick').finished_at));
    expect(time(job('after-quick').finished_at)).toBeLessThanOrEqual(time(job('slow').finished_at));
    expect(time(job('no-artifacts').finished_at)).toBeLessThanOrEqual(time(job('slow').finished_at));
    expect(time(job('staged').started_at)).toBeGreaterThanOrEqual(time(job('slow').finished_at));
    // at-once, in the last stage, did not wait for any stage.
    expect(time(job('at-once').finished_at)).toBeLessThanOrEqual(time(job('slow').finished_at));
  }, 120_000);
});

describe('when', () => {
  it('runs on_failure and always jobs after a failure and skips on_success ones', async () => {
    const p = await rig.t.pipeline(`
stages: [build, cleanup]
broken: { stage: build, script: [exit 1] }
next: { stage: cleanup, script: [echo next] }
rescue: { stage: cleanup, when: on_failure, script: [echo rescued] }
report: { stage: cleanup, when: always, script: [echo reported] }
`);
    expect(await drain(p)).toBe(3);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['broken:failed', 'next:skipped', 'rescue:success', 'report:success']);
    expect(await trace(jobNamed(p, 'rescue').id)).toContain('rescued');
  }, 60_000);

  it('blocks later stages on a manual job with allow_failure: false until it is played', async () => {
    const p = await rig.t.pipeline(`
stages: [build, deploy, verify]
build: { stage: build, script: [echo built] }
deploy: { stage: deploy, when: manual, allow_failure: false, script: [echo deployed] }
verify: { stage: verify, script: [echo verified] }
`);
    await drain(p);
    expect(pipeline(p.id).status).toBe('manual');
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['success', 'manual', 'created']);
    expect((await runOnce('2s')).exitCode).toBe(4);
    const verify = jobNamed(p, 'verify');
    expect((await admin('POST', `/jobs/${verify.id}/play`)).status).toBe(409);
    const played = await admin('POST', `/jobs/${jobNamed(p, 'deploy').id}/play`);
    expect(played.status).toBe(200);
    expect((played.body as JobView).status).toBe('pending');
    expect(await drain(p)).toBe(2);
    expect(pipeline(p.id).status).toBe('success');
    expect(await trace(jobNamed(p, 'deploy').id)).toContain('deployed');
  }, 60_000);

  it('lets the pipeline pass over a manual job that may fail, and plays it later', async () => {
    const p = await rig.t.pipeline(`
stages: [build, deploy, verify]
build: { stage: build, script: [echo built] }
optional: { stage: deploy, when: manual, script: [echo optional ran] }
verify: { stage: verify, script: [echo verified] }
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['build:success', 'optional:manual', 'verify:success']);
    expect(pipeline(p.id).status).toBe('success');
    expect((await admin('POST', `/jobs/${jobNamed(p, 'optional').id}/play`)).status).toBe(200);
    await drain(p);
    expect(jobNamed(p, 'optional').status).toBe('success');
  }, 60_000);

  it('queues a delayed job start_in after its turn came', async () => {
    const p = await rig.t.pipeline(`
later: { when: delayed, start_in: 2 seconds, script: [echo late] }
`);
    const created = jobNamed(p, 'later');
    expect(created.status).toBe('scheduled');
    const result = await runOnce();
    expect(result.exitCode, result.all).toBe(0);
    const done = jobNamed(p, 'later');
    expect(done.status).toBe('success');
    expect(time(done.started_at)).toBeGreaterThanOrEqual(time(created.scheduled_at ?? null));
  }, 60_000);
});

describe('retry', () => {
  it('retries a flaky job as a new build of the same pipeline, for the failure reasons it names', async () => {
    const mark = join(rig.dirs.root, `flaky-${Date.now()}`);
    const p = await rig.t.pipeline(`
stages: [test, after]
flaky:
  stage: test
  retry: { max: 2, when: [script_failure] }
  script: ['test -f ${mark} || { touch ${mark}; echo first attempt fails; exit 1; }', echo second attempt passes]
not-covered:
  stage: test
  allow_failure: true
  retry: { max: 2, when: runner_system_failure }
  script: [exit 2]
after: { stage: after, script: [echo after] }
`);
    const first = jobNamed(p, 'flaky');
    await drain(p);
    const view = pipeline(p.id);
    expect(view.jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['not-covered:failed', 'after:success', 'flaky:success']);
    expect(view.retried).toEqual([{ id: first.id, name: 'flaky', stage: 'test', status: 'failed' }]);
    expect(view.status).toBe('success');
    const old = rig.t.server.getJob(first.id)!;
    expect([old.retried, old.failure_reason]).toEqual([true, 'script_failure']);
    const retry = jobNamed(p, 'flaky');
    expect(retry.attempt).toBe(1);
    expect(await trace(retry.id)).toContain('second attempt passes');
    expect(jobNamed(p, 'not-covered').failure_reason).toBe('script_failure');
  }, 60_000);

  it('retries a job on request, reconsidering what its failure skipped', async () => {
    const mark = join(rig.dirs.root, `manual-retry-${Date.now()}`);
    const p = await rig.t.pipeline(`
stages: [test, deploy]
unit: { stage: test, script: ['test -f ${mark} || { touch ${mark}; exit 1; }'] }
deploy: { stage: deploy, script: [echo deployed] }
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['failed', 'skipped']);
    const failed = jobNamed(p, 'unit');
    expect((await admin('POST', `/jobs/${jobNamed(p, 'deploy').id}/retry`)).status).toBe(409);
    const retried = await admin('POST', `/jobs/${failed.id}/retry`);
    expect(retried.status).toBe(201);
    expect((retried.body as JobView).id).not.toBe(failed.id);
    expect((await admin('POST', `/jobs/${failed.id}/retry`)).status).toBe(409);
    expect(await drain(p)).toBe(2);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['deploy:success', 'unit:success']);
    expect(pipeline(p.id).status).toBe('success');
  }, 60_000);
});
