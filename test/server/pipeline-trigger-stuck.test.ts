/** Trigger jobs as the file gives them, and jobs no runner can take (GitLab's stuck jobs) on the server. */
import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { startTestServer } from '../helpers/server.js';

describe('trigger:', () => {
  it('reads a child pipeline, a multi-project one and the short form', () => {
    const spec = parsePipeline(`
child: { trigger: { include: [{ local: ci/a.yml }, { artifact: gen.yml, job: gen }], strategy: depend, forward: { pipeline_variables: true } } }
other: { trigger: group/other }
short: { trigger: { include: ci/b.yml } }
`);
    expect(spec.jobs.map((job) => [job.name, job.commands, job.trigger])).toEqual([
      ['child', [], { include: [{ local: 'ci/a.yml' }, { artifact: 'gen.yml', job: 'gen' }], depend: true, forward: { yamlVariables: true, pipelineVariables: true } }],
      ['other', [], { project: 'group/other', depend: false, forward: { yamlVariables: true, pipelineVariables: false } }],
      ['short', [], { include: [{ local: 'ci/b.yml' }], depend: false, forward: { yamlVariables: true, pipelineVariables: false } }],
    ]);
  });

  it('refuses a script next to trigger, and a trigger with neither include nor project', () => {
    expect(() => parsePipeline('t: { trigger: { include: a.yml }, script: [x] }\n')).toThrow('jobs:t script cannot be used with trigger');
    expect(() => parsePipeline('t: { trigger: { strategy: depend } }\n')).toThrow('jobs:t trigger must have either include (a child pipeline) or project');
  });

  it('takes no default: keys into a trigger job', () => {
    const spec = parsePipeline('default: { before_script: [setup], image: alpine }\nt: { trigger: { include: a.yml } }\nj: { script: [x] }\n');
    expect(spec.jobs.map((job) => [job.name, job.commands, job.image])).toEqual([
      ['t', [], undefined],
      ['j', ['setup', 'x'], 'alpine'],
    ]);
  });
});

describe('jobs no runner can take', () => {
  it('fails a pending job no runner can take after the stuck timeout, its log saying why', async () => {
    const t = await startTestServer({ stuckPendingTimeoutMs: 200 });
    try {
      await t.registerRunner({ tags: ['linux'] });
      const pipeline = await t.pipeline('tagged: { tags: [docker], script: [x] }\n');
      const id = pipeline.jobs[0]!.id;
      expect(t.server.unrunnableJobs().map((entry) => [entry.job.id, entry.reason])).toEqual([[id, 'no runner has all of its tags (docker); runners have linux']]);
      const job = await t.waitForJob(id, (j) => j.status === 'failed', 10_000);
      expect(job.failure_reason).toBe('stuck_or_timeout_failure');
      expect((await t.server.getTrace(id)).toString()).toContain('this job is stuck, no runner can run it: no runner has all of its tags (docker)');
    } finally {
      await t.close();
    }
  });

  it('hands a waiting job to a runner once it is given the job\'s tags', async () => {
    const t = await startTestServer();
    try {
      const runner = await t.registerRunner({ tags: ['linux'] });
      await t.pipeline('tagged: { tags: [docker, linux], script: [x] }\n');
      expect(t.server.unrunnableJobs()).toHaveLength(1);
      t.server.setRunnerTags(runner.token, ['linux', 'docker']);
      expect(t.server.unrunnableJobs()).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
