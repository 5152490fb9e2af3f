import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { JobLogTee, jobLogLocation } from '../../src/cli/job-output.js';
import type { BuildPayload } from '../../src/protocol/types.js';

function build(id: number, variables: Array<{ key: string; value: string; public: boolean }> = []): BuildPayload {
  return { id, token: 'build-token-xyz', repo_url: 'http://127.0.0.1/x.git', variables, depends_on_builds: [], credentials: [] } as unknown as BuildPayload;
}

function sink(): { out: PassThrough; text: () => string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  return { out, text: () => text };
}

describe('--show-log output', () => {
  it('masks a secret split across chunks', () => {
    const { out, text } = sink();
    const tee = new JobLogTee(out, 'runner-token', false);
    const job = build(1, [{ key: 'SECRET', value: 'hunter22', public: false }]);
    tee.write(job, 'pass=hun');
    tee.write(job, Buffer.from('ter22 ok\n'));
    tee.end(1);
    expect(text()).toBe('pass=[MASKED] ok\n');
  });

  it('prefixes whole lines with the job when several run at once, and writes an unfinished last line at the end', () => {
    const { out, text } = sink();
    const tee = new JobLogTee(out, 'runner-token', true);
    tee.write(build(1), 'one a');
    tee.write(build(2), 'two\n');
    tee.write(build(1), 'nd more\nhalf');
    tee.end(1);
    tee.end(2);
    expect(text()).toBe('[job 2] two\n[job 1] one and more\n[job 1] half\n');
  });

  it('names the job page the coordinator sent, else GitLab\'s project URL form', () => {
    expect(jobLogLocation(build(7, [{ key: 'CI_JOB_URL', value: 'https://ci/x/-/jobs/7', public: true }]), 'https://ci/')).toBe('https://ci/x/-/jobs/7');
    expect(jobLogLocation(build(7, [{ key: 'CI_PROJECT_URL', value: 'https://ci/g/p/', public: true }]), 'https://ci/')).toBe('https://ci/g/p/-/jobs/7');
    expect(jobLogLocation(build(7), 'https://ci/')).toBe('job 7 on https://ci/');
  });
});
