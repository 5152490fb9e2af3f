import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { runningJob, sampleOutput, type RunningJob, startJobTrace } from './job.js';

let job: RunningJob | undefined;
afterEach(async () => {
  await job?.close();
  job = undefined;
});


describe('what the trace contains', () => {
  it('stops the sent trace at the output limit with one notice, and keeps the full log on disk', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { outputLimitKiB: 4 });
    const output = sampleOutput(20_000, 5);
    trace.write(output.subarray(0, 4096));
    expect(trace.truncated).toBe(false);
    for (let offset = 4096; offset < output.length; offset += 777) trace.write(output.subarray(offset, offset + 777));
    expect(trace.truncated).toBe(true);
    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });

    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    const limit = 4 * 1024;
    expect(stored.slice(0, limit)).toBe(output.subarray(0, limit).toString());
    const notice = stored.slice(limit);
    expect(notice.split('exceeded limit').length).toBe(2);
    expect(notice).toContain(`${limit} bytes`);
    expect(notice).toContain(trace.logPath);
    expect(notice.endsWith('\n')).toBe(true);
    expect(Buffer.byteLength(stored)).toBe(limit + Buffer.byteLength(notice));
    expect((await readFile(trace.logPath)).equals(output)).toBe(true);
  });

  it('replaces invalid UTF-8 with U+FFFD and keeps characters split between writes', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job);
    const smile = Buffer.from('😀');
    trace.write(Buffer.from([0x6f, 0x6b, 0x20]));
    trace.write(smile.subarray(0, 1));
    trace.write(smile.subarray(1, 3));
    trace.write(Buffer.concat([smile.subarray(3), Buffer.from([0x20, 0xff, 0xfe, 0x20, 0xe2, 0x82, 0x0a])]));
    trace.write(Buffer.from([0xc3])); // cut off by the end of the job
    await trace.finish('success');
    const stored = await job.ts.server.getTrace(job.build.id);
    expect(stored.toString()).toBe('ok 😀 \ufffd\ufffd \ufffd\n\ufffd');
    expect(stored.equals(Buffer.from('ok 😀 \ufffd\ufffd \ufffd\n\ufffd'))).toBe(true);
  });

  it('masks secrets split across writes before they reach the spool or the server', async () => {
    job = await runningJob({}, { PUBLIC_ONE: 'not-a-secret' });
    const { build, runnerToken } = job;
    const trace = await startJobTrace(job, { secrets: ['correct horse battery'] });
    const text = `token=${build.token} runner=${runnerToken} phrase=correct horse battery repo=${build.repo_url}\n`;
    const bytes = Buffer.from(text);
    // A job's output (its own stream): a secret may be split across its writes.
    const out = trace.openStream();
    for (let offset = 0; offset < bytes.length; offset += 3) out.write(bytes.subarray(offset, offset + 3));
    out.end();
    await trace.finish('success');
    const expected = text
      .replaceAll(build.token, '[MASKED]')
      .replaceAll(runnerToken, '[MASKED]')
      .replaceAll('correct horse battery', '[MASKED]');
    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    expect(stored).toBe(expected);
    expect(stored).not.toContain(build.token);
    expect(stored).toContain('repo=http://gitlab-ci-token:[MASKED]@');
    expect(await readFile(trace.logPath, 'utf8')).toBe(expected);
  });

  it('masks each printed line of a multi-line secret variable, split across writes, with LF or CRLF', async () => {
    const key = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\nab\n-----END RSA PRIVATE KEY-----\n';
    job = await runningJob({}, { DEPLOY_KEY: key });
    const trace = await startJobTrace(job);
    const text =
      `second line: ${key.split('\n')[1]}\n` +
      `third line, CRLF: ${key.split('\n')[2]}\r\n` +
      key.replaceAll('\n', '\r\n') +
      'a short line of it stays: ab\n';
    const bytes = Buffer.from(text);
    const out = trace.openStream();
    for (let offset = 0, size = 1; offset < bytes.length; offset += size, size = (size % 7) + 1) out.write(bytes.subarray(offset, offset + size));
    out.end();
    await trace.finish('success');
    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    expect(stored).toBe(
      'second line: [MASKED]\n' +
        'third line, CRLF: [MASKED]\r\n' +
        '[MASKED]\r\n[MASKED]\r\n[MASKED]\r\nab\r\n[MASKED]\r\n' +
        'a short line of it stays: ab\n',
    );
  });
});
