import { describe, expect, it } from 'vitest';
import { cli } from './cli.js';

describe('demo (npm start)', () => {
  it('runs the example pipeline with a header per job and a summary table, exiting 0 when it passes', async () => {
    const result = await cli(['demo']);
    expect(result.exitCode, result.all).toBe(0);
    const out = result.stdout;
    expect(out).not.toMatch(/\u001b\[/); // not a terminal: no colour codes
    for (const job of ['build', 'test:unit', 'test:flaky', 'package']) expect(out).toMatch(new RegExp(`━━━ job #\\d+ ${job} \\(stage`));
    expect(out).toMatch(/JOB\s+STAGE\s+STATUS\s+DURATION/);
    expect(out).toMatch(/test:flaky\s+test\s+failed/);
    expect(out).toMatch(/package\s+package\s+success/);
    expect(out).toContain('Pipeline #1 success');
  });
});
