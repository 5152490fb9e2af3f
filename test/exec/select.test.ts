import { describe, expect, it } from 'vitest';
import { JobSelectionError, needsOf, selectJobs } from '../../src/exec/select.js';
import type { JobSpec, PipelineSpec } from '../../src/pipeline/spec.js';

function job(name: string, stage: string, extra: Record<string, unknown> = {}): JobSpec {
  return { name, stage, commands: ['true'], afterScript: [], variables: [], services: [], tags: [], when: 'on_success', allowFailure: false, ...extra } as JobSpec;
}

const need = (name: string) => ({ job: name, artifacts: true, optional: false });

const SPEC: PipelineSpec = {
  stages: ['build', 'test', 'deploy'],
  jobs: [
    job('compile', 'build'),
    job('docs', 'build'),
    job('unit', 'test', { needs: [need('compile')], dependencies: ['compile'] }),
    job('e2e', 'test', { needs: [need('compile'), need('docs')] }),
    job('ship', 'deploy', { needs: [need('unit'), need('e2e')] }),
  ],
  variables: [],
  conditions: {},
};

const names = (spec: PipelineSpec) => spec.jobs.map((j) => j.name);

describe('exec job selection', () => {
  it('keeps the whole pipeline when nothing is named', () => {
    expect(selectJobs(SPEC, { jobs: [], stages: [], withNeeds: false })).toBe(SPEC);
  });

  it('runs a named job alone, taking the jobs left out from its needs and dependencies', () => {
    const spec = selectJobs(SPEC, { jobs: ['unit'], stages: [], withNeeds: false });
    expect(names(spec)).toEqual(['unit']);
    expect(needsOf(spec.jobs[0]!)).toEqual([]);
    expect(spec.jobs[0]!.dependencies).toEqual([]);
    expect(needsOf(SPEC.jobs[2]!)).toEqual([need('compile')]); // the engine's spec is not changed
  });

  it('adds what named jobs need, transitively, with --needs', () => {
    expect(names(selectJobs(SPEC, { jobs: ['ship'], stages: [], withNeeds: true }))).toEqual(['compile', 'docs', 'unit', 'e2e', 'ship']);
    const e2e = selectJobs(SPEC, { jobs: ['e2e'], stages: [], withNeeds: true });
    expect(names(e2e)).toEqual(['compile', 'docs', 'e2e']);
  });

  it('adds the earlier stages with --needs for a job without needs, and what those need', () => {
    const spec: PipelineSpec = { ...SPEC, jobs: [...SPEC.jobs, job('lint', 'test'), job('report', 'deploy')] };
    expect(names(selectJobs(spec, { jobs: ['lint'], stages: [], withNeeds: true }))).toEqual(['compile', 'docs', 'lint']);
    expect(names(selectJobs(spec, { jobs: ['report'], stages: [], withNeeds: true }))).toEqual(['compile', 'docs', 'unit', 'e2e', 'lint', 'report']);
  });

  it('selects whole stages, together with named jobs', () => {
    expect(names(selectJobs(SPEC, { jobs: ['ship'], stages: ['build'], withNeeds: false }))).toEqual(['compile', 'docs', 'ship']);
  });

  it('refuses unknown jobs and stages without jobs, listing what exists', () => {
    expect(() => selectJobs(SPEC, { jobs: ['nope', 'unit'], stages: [], withNeeds: false })).toThrow(/no job 'nope' in this pipeline.*compile, docs, unit, e2e, ship/);
    expect(() => selectJobs(SPEC, { jobs: [], stages: ['lint'], withNeeds: false })).toThrow(JobSelectionError);
  });
  it('asks which was meant when the executor word of `exec EXECUTOR JOB` is also a job', () => {
    const spec: PipelineSpec = { ...SPEC, jobs: [...SPEC.jobs, job('docker', 'build')] };
    expect(() => selectJobs(spec, { jobs: ['unit'], stages: [], withNeeds: false, executorWord: 'docker' })).toThrow(/'docker' names both a job of this pipeline and an executor: write `exec --executor docker unit`.*`exec unit docker`/);
    expect(names(selectJobs(SPEC, { jobs: ['unit'], stages: [], withNeeds: false, executorWord: 'docker' }))).toEqual(['unit']);
  });

  it("says exec does not run GitLab Runner's other executors when one is named as a job", () => {
    expect(() => selectJobs(SPEC, { jobs: ['kubernetes', 'unit'], stages: [], withNeeds: false })).toThrow(/no job 'kubernetes' in this pipeline .*'kubernetes' is an executor exec does not run/);
    expect(() => selectJobs(SPEC, { jobs: ['nope'], stages: [], withNeeds: false })).toThrow(/^no job 'nope' in this pipeline \(after rules\); its jobs: compile, docs, unit, e2e, ship$/);
  });
});
