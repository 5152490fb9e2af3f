import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../src/cli/demo.js';
import { cli } from './cli.js';

describe('demo (npm start)', () => {
  it('runs the example pipeline with a header per job and a summary table, exiting 0 when it passes', async () => {
    const result = await cli(['demo']);
    expect(result.exitCode, result.all).toBe(0);
    const out = result.stdout;
    expect(out).not.toMatch(/\u001b\[/); // not a terminal: no colour codes
    for (const job of ['build', 'test:unit', 'test:flaky', 'package']) expect(out).toMatch(new RegExp(`━━━ job #\\d+ ${job} \\(stage`));
    expect(out).toMatch(/JOB\s+STAGE\s+STATUS\s+DURATION/);
    expect(out).toMatch(/test:flaky\s+test\s+failed \(allowed\)/);
    expect(out).toMatch(/package\s+package\s+success/);
    expect(out).toContain('Pipeline #1 success');
  });
});

describe('demo with a pipeline blocked on a manual job', () => {
  it('stops at the blocked (manual) pipeline instead of waiting for ever, and says it is blocked', async () => {
    const chunks: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    });
    const pipeline = 'stages: [build, deploy]\nbuild: { stage: build, script: [echo built] }\napprove:\n  stage: build\n  rules: [{ when: manual }]\n  script: [echo approved]\nship: { stage: deploy, script: [echo shipped] }\n';
    const result = await runDemo({ out, color: false, concurrent: 1, signal: AbortSignal.timeout(60_000), pipeline });
    expect(result.pipelineStatus).toBe('manual');
    expect(result.jobs.map((job) => `${job.name}:${job.status}`)).toEqual(['build:success', 'approve:manual', 'ship:created']);
    expect(chunks.join('')).toContain('Pipeline #1 manual (blocked: waiting for a manual job to be played)');
  }, 90_000);
});
