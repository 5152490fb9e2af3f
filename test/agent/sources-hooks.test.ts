/**
 * The scripts around get_sources, as GitLab Runner 19 orders them: the runner's
 * pre_get_sources_script (pre_clone_script, its old name, too), the job's `hooks:` from
 * `.gitlab-ci.yml`, the fetch, the runner's post_get_sources_script; none for GIT_STRATEGY none. Shell
 * executor, reference server over v4, real git.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runV4Job } from '../helpers/v4-job.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

const runJob = (yaml: string, runner: Record<string, unknown> = {}) => runV4Job(t, token, yaml, { runner });

const order = (trace: string, marks: string[]): number[] => marks.map((mark) => trace.indexOf(mark));

describe('scripts around get_sources', () => {
  it('runs the runner\'s pre script, the job\'s hook, the fetch, then the runner\'s post script', async () => {
    const yaml = 'j:\n  hooks:\n    pre_get_sources_script:\n      - echo "job-hook in $(pwd) readme=$(test -e README.md && echo yes || echo no)"\n  script:\n    - echo built\n';
    const run = await runJob(yaml, { pre_get_sources_script: 'echo runner-pre', post_get_sources_script: 'echo "runner-post readme=$(cat README.md)"' });
    expect(run.status, run.trace).toBe('success');
    const at = order(run.trace, ['runner-pre', 'job-hook in', 'Fetching changes', 'runner-post readme=# p', 'built']);
    expect(at.every((position) => position >= 0), run.trace).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(run.trace).toContain('readme=no');
    expect(run.trace).toContain('$ echo runner-pre');
  });

  it('takes pre_clone_script as pre_get_sources_script', async () => {
    const run = await runJob('j:\n  script:\n    - echo built\n', { pre_clone_script: 'echo old-name-ran' });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace.indexOf('old-name-ran')).toBeLessThan(run.trace.indexOf('Fetching changes'));
  });

  it('runs none of them for GIT_STRATEGY none, and fails the job when one fails', async () => {
    const none = await runJob('j:\n  variables:\n    GIT_STRATEGY: none\n  hooks:\n    pre_get_sources_script: [echo job-hook-ran]\n  script:\n    - echo built\n', { pre_get_sources_script: 'echo runner-pre-ran' });
    expect(none.status, none.trace).toBe('success');
    expect(none.trace).not.toContain('job-hook-ran');
    expect(none.trace).not.toContain('runner-pre-ran');
    const failing = await runJob('j:\n  hooks:\n    pre_get_sources_script: [exit 3]\n  script:\n    - echo never\n');
    expect(failing.status).toBe('failed');
    expect(failing.trace).toContain('getting sources failed: exit status 3');
    expect(failing.trace).not.toContain('$ echo never');
  });
});
