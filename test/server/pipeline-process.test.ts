/** Stage progression and composite statuses (GitLab 8.x rules), without a network. */
import { describe, expect, it } from 'vitest';
import type { BuildStatus } from '../../src/protocol/types.js';
import { pipelineStatus, processPipeline } from '../../src/server/state/pipeline-progress.js';
import type { JobSpec, JobWhen } from '../../src/pipeline/spec.js';
import { Store, type BuildRecord, type PipelineRecord } from '../../src/server/state/store.js';

function job(name: string, stage: string, extra: Partial<JobSpec> = {}): JobSpec {
  return { name, stage, commands: ['true'], afterScript: [], variables: [], services: [], tags: [], when: 'on_success', allowFailure: false, ...extra };
}

function setup(stages: string[], jobs: JobSpec[]): { store: Store; pipeline: PipelineRecord; build: (name: string) => BuildRecord } {
  const store = new Store();
  const project = store.addProject('g/p', '/nowhere');
  const pipeline = store.addPipeline({ projectId: project.id, ref: 'main', tag: false, sha: 'a'.repeat(40), beforeSha: '0'.repeat(40), variables: {}, stages });
  for (const spec of jobs) store.addBuild(pipeline, spec, stages.indexOf(spec.stage));
  const build = (name: string): BuildRecord => store.pipelineBuilds(pipeline).find((b) => b.job.name === name)!;
  return { store, pipeline, build };
}

function finish(b: BuildRecord, status: BuildStatus): void {
  b.status = status;
}

describe('stage progression', () => {
  it('queues only the first stage, then the next once it completes', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('one', 'a'), job('two', 'a'), job('three', 'b')]);
    expect(processPipeline(store, pipeline)).toBe(true);
    expect([build('one').status, build('two').status, build('three').status]).toEqual(['pending', 'pending', 'created']);
    expect(pipelineStatus(store, pipeline)).toBe('pending');
    finish(build('one'), 'success');
    expect(processPipeline(store, pipeline)).toBe(false);
    expect(build('three').status).toBe('created');
    expect(pipelineStatus(store, pipeline)).toBe('running');
    finish(build('two'), 'success');
    expect(processPipeline(store, pipeline)).toBe(true);
    expect(build('three').status).toBe('pending');
  });

  it.each<[JobWhen, BuildStatus, 'pending' | 'skipped' | 'manual']>([
    ['on_success', 'success', 'pending'],
    ['on_success', 'failed', 'skipped'],
    ['on_failure', 'success', 'skipped'],
    ['on_failure', 'failed', 'pending'],
    ['always', 'success', 'pending'],
    ['always', 'failed', 'pending'],
    ['always', 'canceled', 'skipped'],
    ['on_success', 'canceled', 'skipped'],
    ['manual', 'success', 'manual'],
    ['manual', 'failed', 'skipped'],
  ])('a %s job after a %s stage becomes %s', (when, prior, expected) => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('first', 'a'), job('second', 'b', { when })]);
    processPipeline(store, pipeline);
    finish(build('first'), prior);
    processPipeline(store, pipeline);
    expect(build('second').status).toBe(expected);
  });

  it('counts an allowed failure as success, for progression and for the pipeline', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('flaky', 'a', { allowFailure: true }), job('next', 'b'), job('rescue', 'b', { when: 'on_failure' })]);
    processPipeline(store, pipeline);
    finish(build('flaky'), 'failed');
    processPipeline(store, pipeline);
    expect(build('next').status).toBe('pending');
    expect(build('rescue').status).toBe('skipped');
    finish(build('next'), 'success');
    expect(pipelineStatus(store, pipeline)).toBe('success');
  });

  it('allows a failure only with one of allow_failure: exit_codes', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('known', 'a', { allowFailureExitCodes: [3] }), job('other', 'a', { allowFailureExitCodes: [3] }), job('next', 'b')]);
    processPipeline(store, pipeline);
    Object.assign(build('known'), { status: 'failed', exitCode: 3 });
    Object.assign(build('other'), { status: 'success' });
    processPipeline(store, pipeline);
    expect(build('next').status).toBe('pending');
    build('next').status = 'success';
    expect(pipelineStatus(store, pipeline)).toBe('success');
    Object.assign(build('other'), { status: 'failed', exitCode: 4 });
    expect(pipelineStatus(store, pipeline)).toBe('failed');
  });

  it('does not let a manual job block later stages, and a skipped-only stage counts as success', () => {
    const { store, pipeline, build } = setup(['a', 'b', 'c'], [job('gate', 'a', { when: 'manual', allowFailure: true }), job('cleanup', 'b', { when: 'on_failure' }), job('deploy', 'c')]);
    processPipeline(store, pipeline);
    expect(build('gate').status).toBe('manual');
    expect(build('cleanup').status).toBe('skipped');
    expect(build('deploy').status).toBe('pending');
  });

  it('reports failed and canceled pipelines', () => {
    const failed = setup(['a'], [job('x', 'a'), job('y', 'a')]);
    processPipeline(failed.store, failed.pipeline);
    finish(failed.build('x'), 'failed');
    finish(failed.build('y'), 'success');
    expect(pipelineStatus(failed.store, failed.pipeline)).toBe('failed');
    const canceled = setup(['a'], [job('x', 'a')]);
    processPipeline(canceled.store, canceled.pipeline);
    finish(canceled.build('x'), 'canceled');
    expect(pipelineStatus(canceled.store, canceled.pipeline)).toBe('canceled');
  });
});

describe('needs, blocking manual jobs and delayed jobs', () => {
  const need = (name: string, artifacts = true) => ({ job: name, artifacts, optional: false });

  it('starts a job with needs when what it needs is done, whatever the stages', () => {
    const { store, pipeline, build } = setup(['a', 'b', 'c'], [
      job('quick', 'a'),
      job('slow', 'a'),
      job('dag', 'b', { needs: [need('quick')] }),
      job('staged', 'b'),
      job('first', 'c', { needs: [] }),
    ]);
    processPipeline(store, pipeline);
    expect(['quick', 'slow', 'dag', 'staged', 'first'].map((n) => build(n).status)).toEqual(['pending', 'pending', 'created', 'created', 'pending']);
    finish(build('quick'), 'success');
    expect(processPipeline(store, pipeline)).toBe(true);
    expect([build('dag').status, build('staged').status]).toEqual(['pending', 'created']);
  });

  it('skips a job whose needed job failed, and runs its on_failure sibling', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('x', 'a'), job('y', 'b', { needs: [need('x')] }), job('z', 'b', { needs: [need('x')], when: 'on_failure' })]);
    processPipeline(store, pipeline);
    finish(build('x'), 'failed');
    processPipeline(store, pipeline);
    expect([build('y').status, build('z').status]).toEqual(['skipped', 'pending']);
  });

  it('blocks later stages and the pipeline on a manual job with allow_failure: false', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('gate', 'a', { when: 'manual', allowFailure: false }), job('after', 'b')]);
    processPipeline(store, pipeline);
    expect([build('gate').status, build('after').status]).toEqual(['manual', 'created']);
    expect(pipelineStatus(store, pipeline)).toBe('manual');
  });

  it('makes a job that needs a manual job wait for it, even one allowed to fail', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('gate', 'a', { when: 'manual', allowFailure: true }), job('after', 'b', { needs: [need('gate')] })]);
    processPipeline(store, pipeline);
    expect(build('after').status).toBe('created');
    expect(pipelineStatus(store, pipeline)).toBe('manual');
    finish(build('gate'), 'success');
    processPipeline(store, pipeline);
    expect(build('after').status).toBe('pending');
  });

  it('schedules a delayed job start_in seconds after its turn, holding up later stages', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('later', 'a', { when: 'delayed', startIn: 30 }), job('after', 'b')]);
    expect(processPipeline(store, pipeline, 1_000_000)).toBe(false);
    expect(build('later').status).toBe('scheduled');
    expect(build('later').scheduledAt?.getTime()).toBe(1_030_000);
    expect(build('after').status).toBe('created');
    expect(pipelineStatus(store, pipeline)).toBe('scheduled');
  });

  it('counts only the latest build of a retried job', () => {
    const { store, pipeline, build } = setup(['a', 'b'], [job('x', 'a'), job('y', 'b')]);
    processPipeline(store, pipeline);
    finish(build('x'), 'failed');
    build('x').retried = true;
    const retry = store.addBuild(pipeline, build('x').job, 0, 1);
    processPipeline(store, pipeline);
    expect([retry.status, build('y').status]).toEqual(['pending', 'created']);
    finish(retry, 'success');
    processPipeline(store, pipeline);
    expect(build('y').status).toBe('pending');
  });
});
