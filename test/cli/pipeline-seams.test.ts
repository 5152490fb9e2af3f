/**
 * Where the pipeline engine's two halves meet: the jobs `rules` choose (engine) running as a DAG, as
 * manual or delayed jobs (sched). Real server, real git, real `run-once` (see pipeline-runtime-rig.ts).
 */
import { describe, expect, it } from 'vitest';
import { plannedJobs } from '../../src/server/index.js';
import { waitUntil } from './helpers.js';
import { time, useRuntimeRig } from './pipeline-runtime-rig.js';

const rig = useRuntimeRig();
const { runOnce, admin, pipeline, jobNamed, trace, drain } = rig;
const statuses = (id: number): string[] => pipeline(id).jobs.map((job) => `${job.name}:${job.status}`);

const FILTERED_NEED = (docsNeed: string) => `
stages: [build, test]
build:
  stage: build
  script: [echo built > built.txt]
  artifacts: { paths: [built.txt] }
docs:
  stage: build
  rules:
    - if: $DOCS == "yes"
  script: [echo docs]
test:
  stage: test
  needs: [build, ${docsNeed}]
  script: [cat built.txt]
`;

describe('needs on jobs the rules choose', () => {
  it('drops an optional need on a job the rules left out, and runs the job once what it needs is done', async () => {
    const p = await rig.t.pipeline(FILTERED_NEED('{ job: docs, optional: true }'));
    expect(p.jobs.map((job) => job.name)).toEqual(['build', 'test']);
    expect(p.jobs.find((job) => job.name === 'test')?.needs).toEqual([{ job: 'build', artifacts: true, optional: false }]);
    expect(p.excluded).toEqual([{ name: 'docs', stage: 'build', rule: 'no rule matched' }]);
    expect(await drain(p)).toBe(2);
    expect(statuses(p.id)).toEqual(['build:success', 'test:success']);
    expect(await trace(jobNamed(p, 'test').id)).toContain('built');

    // When the rules do choose it, the need stays, and the plan (exec --list) shows it.
    const preview = await rig.t.server.planPipeline({ project: rig.t.projectName, config: FILTERED_NEED('{ job: docs, optional: true }'), variables: { DOCS: 'yes' } });
    const test = plannedJobs(preview.plan).find((row) => row.name === 'test');
    expect(test?.job?.needs?.map((need) => need.job)).toEqual(['build', 'docs']);
  }, 60_000);

  it('refuses a need on a job the rules left out unless it is optional, creating nothing', async () => {
    const before = rig.t.server.listJobs().length;
    await expect(rig.t.pipeline(FILTERED_NEED('docs'))).rejects.toThrow(
      "jobs:test needs names 'docs', which the rules leave out of this pipeline; add optional: true if it may be absent",
    );
    expect(rig.t.server.listJobs().length).toBe(before);
    // The same file is fine for a pipeline whose rules choose docs.
    const preview = await rig.t.server.planPipeline({ project: rig.t.projectName, config: FILTERED_NEED('docs'), variables: { DOCS: 'yes' } });
    expect(preview.plan.jobs.map((job) => job.name)).toEqual(['build', 'docs', 'test']);
  });

  it('expands a need on matrix and parallel jobs created through rules to the copies the rules chose', async () => {
    const config = (buildNeed: string) => `
stages: [build, pack]
build:
  stage: build
  parallel:
    matrix:
      - ARCH: [arm, x86, riscv]
  rules:
    - if: $ARCH == "riscv"
      when: never
    - when: on_success
  script: [mkdir -p out, echo "$ARCH" > "out/$ARCH.txt"]
  artifacts: { paths: [out/] }
shard:
  stage: build
  parallel: 2
  rules:
    - if: $CI_COMMIT_BRANCH == "main"
  script: [mkdir -p out, echo "$CI_NODE_INDEX" > "out/shard-$CI_NODE_INDEX.txt"]
  artifacts: { paths: [out/] }
pack:
  stage: pack
  needs: [shard, ${buildNeed}]
  script: [cat out/arm.txt out/x86.txt out/shard-1.txt out/shard-2.txt, test ! -f out/riscv.txt]
`;
    // GitLab expands the need to every copy first: a copy the rules removed is then missing.
    await expect(rig.t.pipeline(config('build'))).rejects.toThrow("jobs:pack needs names 'build: [riscv]', which the rules leave out of this pipeline");

    const p = await rig.t.pipeline(config('{ job: build, optional: true }'));
    expect(p.jobs.map((job) => job.name)).toEqual(['build: [arm]', 'build: [x86]', 'shard 1/2', 'shard 2/2', 'pack']);
    expect(p.jobs.find((job) => job.name === 'pack')?.needs?.map((need) => need.job)).toEqual(['shard 1/2', 'shard 2/2', 'build: [arm]', 'build: [x86]']);
    expect(await drain(p)).toBe(5);
    expect(statuses(p.id)).toEqual(['build: [arm]:success', 'build: [x86]:success', 'shard 1/2:success', 'shard 2/2:success', 'pack:success']);
    const log = await trace(jobNamed(p, 'pack').id);
    for (const name of ['build: [arm]', 'build: [x86]', 'shard 1/2', 'shard 2/2']) expect(log).toContain(`Downloading artifacts for ${name} (`);
    expect(log).not.toContain('riscv (');
  }, 90_000);
});

describe('manual and delayed jobs made so by rules', () => {
  it('blocks the pipeline on a job a rule made manual until it is played; a job manual by its own when does not block', async () => {
    const p = await rig.t.pipeline(`
stages: [build, deploy]
build: { stage: build, script: [echo built] }
approve:
  stage: build
  rules:
    - if: $CI_PIPELINE_SOURCE == "push"
      when: manual
  script: [echo approved]
optional:
  stage: build
  when: manual
  rules:
    - if: $CI_COMMIT_BRANCH == "main"
  script: [echo optional]
ship: { stage: deploy, script: [echo shipped] }
`);
    const view = (name: string) => pipeline(p.id).jobs.find((job) => job.name === name);
    expect([view('approve')?.when, view('approve')?.allow_failure]).toEqual(['manual', false]);
    expect([view('optional')?.when, view('optional')?.allow_failure]).toEqual(['manual', true]);
    expect(await drain(p)).toBe(1);
    expect(statuses(p.id)).toEqual(['build:success', 'approve:manual', 'optional:manual', 'ship:created']);
    expect(pipeline(p.id).status).toBe('manual');

    const played = await admin('POST', `/jobs/${view('approve')!.id}/play`);
    expect(played.status).toBe(200);
    expect(await drain(p)).toBe(2);
    expect(statuses(p.id)).toEqual(['build:success', 'approve:success', 'optional:manual', 'ship:success']);
    expect(pipeline(p.id).status).toBe('success');
    expect(await trace(jobNamed(p, 'approve').id)).toContain('approved');
  }, 60_000);

  it('schedules a job a rule made delayed start_in after its turn, then runs it', async () => {
    const p = await rig.t.pipeline(`
stages: [build, test]
build: { stage: build, script: [echo built] }
later:
  stage: test
  rules:
    - if: $CI_COMMIT_BRANCH == "main"
      when: delayed
      start_in: 2 seconds
  script: [echo later]
`);
    expect(await drain(p)).toBe(1);
    const scheduled = jobNamed(p, 'later');
    expect(scheduled.status).toBe('scheduled');
    expect(time(scheduled.scheduled_at)).toBeGreaterThanOrEqual(time(jobNamed(p, 'build').finished_at) + 1_000);
    await waitUntil(() => jobNamed(p, 'later').status === 'pending', 30_000, 'delayed job queued');
    const result = await runOnce();
    expect(result.exitCode, result.all).toBe(0);
    expect(statuses(p.id)).toEqual(['build:success', 'later:success']);
    expect(time(jobNamed(p, 'later').started_at)).toBeGreaterThanOrEqual(time(scheduled.scheduled_at));
  }, 60_000);

  it('refuses start_in next to rules, as GitLab does: the rule that makes the job delayed carries it', async () => {
    await expect(rig.t.pipeline('later:\n  script: [x]\n  start_in: 1 minute\n  rules:\n    - when: delayed\n      start_in: 1 minute\n')).rejects.toThrow(
      'jobs:later start_in may not be used with rules: put start_in in the rule that says when: delayed',
    );
    await expect(rig.t.pipeline('later:\n  script: [x]\n  rules:\n    - when: delayed\n')).rejects.toThrow('jobs:later rules:0:start_in is missing');
  });
});
