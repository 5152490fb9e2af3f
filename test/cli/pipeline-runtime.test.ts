/**
 * The pipeline engine's runtime features end to end: the reference server with a real git project,
 * real runners (`run-once`, and `run` where jobs must run side by side), jobs' start and end times
 * as the server recorded them.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobView, PipelineView } from '../../src/server/index.js';
import { git } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
let token: string;
let dirs: { root: string; builds: string; cache: string };

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# project\n', 'deps.lock': 'left-pad 1.0\n' } });
  ({ token } = await t.registerRunner());
  dirs = await workDirs();
});
afterAll(async () => {
  await t.close();
  await rm(dirs.root, { recursive: true, force: true });
});

/** One job through a real `run-once` sharing one builds and cache dir across the file. */
function runOnce(wait = '20s') {
  return cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', dirs.builds, '--cache-dir', dirs.cache, '--wait-timeout', wait]);
}

async function admin(method: string, path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${t.url}/admin/api${path}`, { method, headers: { 'private-token': t.server.adminToken } });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
}

const pipeline = (id: number): PipelineView => t.server.getPipeline(id)!;
const jobNamed = (p: PipelineView, name: string): JobView => t.server.getJob(pipeline(p.id).jobs.find((job) => job.name === name)!.id)!;
const trace = async (id: number): Promise<string> => (await t.server.getTrace(id)).toString('utf8');
const time = (iso: string | null): number => new Date(iso ?? NaN).getTime();

/** Runs jobs with run-once until the pipeline has none pending, returning how many ran. */
async function drain(p: PipelineView): Promise<number> {
  let ran = 0;
  while (pipeline(p.id).jobs.some((job) => job.status === 'pending')) {
    const result = await runOnce();
    expect([0, 1], result.all).toContain(result.exitCode);
    ran += 1;
  }
  return ran;
}

describe('needs (DAG)', () => {
  it('starts a job as soon as what it needs is done, regardless of stages, and passes artifacts through needs', async () => {
    const config = join(dirs.root, 'dag.toml');
    await writeFile(config, `concurrent = 4\ncheck_interval = 1\n[[runners]]\n  name = "dag"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${dirs.builds}-dag"\n  cache_dir = "${dirs.cache}"\n`);
    const p = await t.pipeline(`
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
    const p = await t.pipeline(`
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
    const p = await t.pipeline(`
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
    const p = await t.pipeline(`
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
    const p = await t.pipeline(`
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
    const mark = join(dirs.root, `flaky-${Date.now()}`);
    const p = await t.pipeline(`
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
    const old = t.server.getJob(first.id)!;
    expect([old.retried, old.failure_reason]).toEqual([true, 'script_failure']);
    const retry = jobNamed(p, 'flaky');
    expect(retry.attempt).toBe(1);
    expect(await trace(retry.id)).toContain('second attempt passes');
    expect(jobNamed(p, 'not-covered').failure_reason).toBe('script_failure');
  }, 60_000);

  it('retries a job on request, reconsidering what its failure skipped', async () => {
    const mark = join(dirs.root, `manual-retry-${Date.now()}`);
    const p = await t.pipeline(`
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

describe('reports, coverage, exclude, cache', () => {
  it('gives a dotenv report\'s variables to the jobs that take its artifacts', async () => {
    const p = await t.pipeline(`
stages: [build, test]
version:
  stage: build
  script: ['printf "BUILD_VERSION=1.2.3\\n# a comment\\nBUILD_CHANNEL=\\"beta\\"\\n" > build.env']
  artifacts: { reports: { dotenv: build.env } }
use:
  stage: test
  script: ['echo "version=$BUILD_VERSION channel=$BUILD_CHANNEL"', test "$BUILD_VERSION" = 1.2.3]
none:
  stage: test
  dependencies: []
  script: ['test -z "$BUILD_VERSION"']
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['version:success', 'use:success', 'none:success']);
    expect(jobNamed(p, 'version').dotenv_variables).toEqual(['BUILD_VERSION', 'BUILD_CHANNEL']);
    expect(await trace(jobNamed(p, 'use').id)).toContain('version=1.2.3 channel=beta');
  }, 60_000);

  it('stores the coverage the job\'s regex finds in its trace, and leaves excluded files out of artifacts', async () => {
    const p = await t.pipeline(`
stages: [build, test]
measure:
  stage: build
  coverage: '/Lines: +(\\d+\\.\\d+)%/'
  script: ['echo "Lines:  12.0%"', 'echo "Lines:  87.5%"', mkdir -p out/logs, echo keep > out/a.txt, echo drop > out/logs/b.log, echo drop > out/c.tmp]
  artifacts: { paths: [out/], exclude: ['out/logs', '**/*.tmp'] }
check:
  stage: test
  script: [test -f out/a.txt, test ! -e out/logs/b.log, test ! -e out/c.tmp]
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['success', 'success']);
    expect(jobNamed(p, 'measure').coverage).toBe(87.5);
    expect(await trace(jobNamed(p, 'measure').id)).toContain('Excluded 2 file(s) matching artifacts:exclude');
  }, 60_000);

  it('restores only with policy pull, saves only with push', async () => {
    const key = `policy-${Date.now()}`;
    const cache = (policy: string) => `{ key: ${key}, paths: [vendor/], policy: ${policy} }`;
    const p = await t.pipeline(`
stages: [seed, read, check]
seed: { stage: seed, cache: ${cache('push')}, script: [test ! -e vendor/dep.txt, mkdir -p vendor, echo seeded > vendor/dep.txt] }
read: { stage: read, cache: ${cache('pull')}, script: [test "$(cat vendor/dep.txt)" = seeded, echo changed > vendor/dep.txt] }
check: { stage: check, cache: ${cache('pull-push')}, script: [test "$(cat vendor/dep.txt)" = seeded] }
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['success', 'success', 'success']);
    expect(await trace(jobNamed(p, 'seed').id)).toContain(`Not restoring cache "${key}": cache:policy is push`);
    expect(await trace(jobNamed(p, 'read').id)).toContain(`Not saving cache "${key}": cache:policy is pull`);
    // A push job never restores, even with a cache there.
    const again = await t.pipeline(`seed: { cache: ${cache('push')}, script: [test ! -e vendor/dep.txt, mkdir -p vendor, echo x > vendor/dep.txt] }\n`);
    await drain(again);
    expect(jobNamed(again, 'seed').status).toBe('success');
  }, 90_000);

  it('keys a cache on the content of files at the commit, with a prefix', async () => {
    const config = 'deps: { cache: { key: { files: [deps.lock], prefix: deps }, paths: [vendor/] }, script: [mkdir -p vendor, date > vendor/x] }\n';
    const keyOf = async (): Promise<string> => {
      const p = await t.pipeline(config);
      await drain(p);
      const match = /Creating cache "(deps-[0-9a-f]{40})"/.exec(await trace(jobNamed(p, 'deps').id));
      expect(match, await trace(jobNamed(p, 'deps').id)).not.toBeNull();
      return match![1]!;
    };
    const first = await keyOf();
    await writeFile(join(t.projectPath, 'other.txt'), 'unrelated\n');
    await git(t.projectPath, ['add', '-A']);
    await git(t.projectPath, ['commit', '-q', '-m', 'unrelated change']);
    expect(await keyOf()).toBe(first);
    await writeFile(join(t.projectPath, 'deps.lock'), 'left-pad 1.1\n');
    await git(t.projectPath, ['commit', '-q', '-am', 'bump deps']);
    expect(await keyOf()).not.toBe(first);
  }, 90_000);
});

describe('interruptible', () => {
  it('cancels an older pipeline of the ref whose running jobs are interruptible, and not one with a started job that is not', async () => {
    const p1 = await t.pipeline('lint: { interruptible: true, script: [echo lint started, sleep 30] }\n');
    const running = runOnce();
    await waitUntil(() => jobNamed(p1, 'lint').status === 'running', 30_000, 'lint running');
    const p2 = await t.pipeline('deploy: { script: [echo deploying, sleep 4] }\nlint: { interruptible: true, script: [echo lint] }\n');
    expect(jobNamed(p1, 'lint').status).toBe('canceled');
    const stopped = await running;
    expect(stopped.exitCode, stopped.all).toBe(1);
    // p2's deploy (not interruptible) starts; a newer pipeline then leaves p2 alone.
    const deploying = runOnce();
    await waitUntil(() => jobNamed(p2, 'deploy').status === 'running', 30_000, 'deploy running');
    const p3 = await t.pipeline('lint: { interruptible: true, script: [echo lint] }\n');
    expect(jobNamed(p2, 'lint').status).toBe('pending');
    expect((await deploying).exitCode).toBe(0);
    expect(jobNamed(p2, 'deploy').status).toBe('success');
    await drain(p2);
    await drain(p3);
  }, 90_000);
});
