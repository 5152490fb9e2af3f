/** The user's steps by their `when`, with a shell that only records (the real runs are in stages.test.ts). */
import { describe, expect, it } from 'vitest';
import type { JobStep } from '../../src/protocol/types.js';
import { runSteps, type StepsRun } from '../../src/agent/job/user-steps.js';
import { jobSignal } from '../../src/agent/job/job-signal.js';
import { runnerSchema } from '../../src/agent/config/schema.js';

function harness(exitCodes: Record<string, number>) {
  const ran: string[] = [];
  const written: string[] = [];
  const never = new AbortController().signal;
  const job = jobSignal(3600, never, never, () => undefined);
  const s = {
    build: {},
    run: { write: (text: string) => written.push(text), executor: {} },
    job,
    env: { build: [], host: [] },
    shell: async (_executor: unknown, stage: string) => {
      ran.push(stage);
      return { exitCode: exitCodes[stage] ?? 0, aborted: false };
    },
    script: { afterScriptTimeoutMs: 300_000, afterScriptIgnoreErrors: true, sectionAttempts: 1, warnings: [] },
    options: { echo: true, workDir: '/', variables: [] },
    runner: runnerSchema.parse({ name: 'r', url: 'http://ci.example.com/', token: 't' }),
  } as unknown as StepsRun;
  return { s, ran, written, job };
}

const step = (name: string, when: JobStep['when'], allow = false): JobStep => ({ name, script: [`echo ${name}`], when, allow_failure: allow });

describe('the user\'s steps', () => {
  it('runs each step by its when: on_success while all went well, on_failure once something failed, always either way', async () => {
    const steps = [step('script', 'on_success'), step('release', 'on_success'), step('notify', 'on_failure'), step('report', 'always')];
    const ok = harness({});
    expect((await runSteps(steps, 0, undefined, ok.s)).status).toBe('success');
    expect(ok.ran).toEqual(['step_script', 'step_release', 'step_report']);
    const failed = harness({ step_script: 3 });
    const outcome = await runSteps(steps, 0, undefined, failed.s);
    expect(failed.ran).toEqual(['step_script', 'step_notify', 'step_report']);
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.message).toBe('exit status 3');
    ok.job.dispose();
    failed.job.dispose();
  });

  it('goes on after a first step that ran chained to get_sources, and says that allow_failure is not honoured', async () => {
    const h = harness({});
    const outcome = await runSteps([step('script', 'on_success'), step('release', 'on_success', true)], 1, { exitCode: 0, aborted: false }, h.s);
    expect(outcome.status).toBe('success');
    expect(h.ran).toEqual(['step_release']);
    expect(h.written.join('')).toContain('WARNING: step release: allow_failure is not honoured');
    h.job.dispose();
  });
});
