import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type LogFormat } from '../../src/log/index.js';

/** A destination that records what is written; `isTTY` as a terminal's stream has it. */
function sink(isTTY: boolean): { stream: Writable & { isTTY?: boolean }; text: () => string } {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString();
        done();
      },
    }),
    isTTY ? { isTTY: true } : {},
  );
  return { stream, text: () => text };
}

function logged(format: LogFormat, isTTY: boolean): string {
  const out = sink(isTTY);
  const logger = createLogger({ format, destination: out.stream });
  logger.warn({ runner: 'a b' }, 'Checking for jobs... failed');
  logger.info('plain');
  return out.text();
}

describe('logger', () => {
  it('colours runner and text lines only when the destination is a terminal', () => {
    expect(logged('runner', true)).toContain('\u001b[33mWARNING: \u001b[0m');
    expect(logged('text', true)).toContain('\u001b[33mWARN \u001b[0m');
    expect(logged('runner', false)).toBe('WARNING: Checking for jobs... failed                          runner="a b"\nplain\n');
    expect(logged('text', false)).not.toContain('\u001b[');
    expect(logged('json', true)).not.toContain('\u001b[');
  });

  it('gives children their bindings, lets the call override them, and shares the level with the root', async () => {
    const out = sink(false);
    const root = createLogger({ format: 'json', destination: out.stream, level: 'info' });
    const child = root.child({ component: 'job', jobId: 1 });
    child.debug('hidden');
    root.level = 'debug';
    child.debug({ jobId: 2, err: new Error('boom') }, 'shown');
    const record = JSON.parse(out.text()) as Record<string, unknown>;
    expect(record).toMatchObject({ level: 'debug', msg: 'shown', component: 'job', jobId: 2, err: { type: 'Error', message: 'boom' } });
    expect(child.level).toBe('debug');
    // Written as logged: a flush has nothing to wait for, and calls back.
    await new Promise<void>((resolve) => root.flush(() => resolve()));
  });

  it('keeps a value from forging a line of its own', () => {
    const out = sink(false);
    createLogger({ format: 'runner', destination: out.stream }).info({ branch: 'x\nERROR: fake' }, 'ref');
    expect(out.text().split('\n')).toHaveLength(2);
  });

  it('masks tokens and the credentials in URLs, in a call\'s fields and a child\'s bindings', () => {
    const out = sink(false);
    const root = createLogger({ format: 'json', destination: out.stream });
    root.child({ runner: 'r', token: 'runner-secret' }).info(
      {
        repo_url: 'http://gitlab-ci-token:job-secret@ci.example/group/app.git',
        url: '/ci/api/v1/builds/1/artifacts?token=query-secret&expire_in=1d',
        headers: { authorization: 'Bearer header-secret', 'job-token': 'header-secret-2' },
      },
      'request',
    );
    const text = out.text();
    expect(text).not.toMatch(/secret/);
    expect(JSON.parse(text)).toMatchObject({
      runner: 'r',
      token: '[MASKED]',
      repo_url: 'http://ci.example/group/app.git',
      url: '/ci/api/v1/builds/1/artifacts?token=[MASKED]&expire_in=1d',
      headers: { authorization: '[MASKED]', 'job-token': '[MASKED]' },
    });
  });

  it('prints an error field as its message on a human line', () => {
    const out = sink(false);
    createLogger({ format: 'runner', destination: out.stream }).error({ err: new Error('disk full') }, 'cannot write');
    expect(out.text()).toBe(`ERROR: ${'cannot write'.padEnd(52)} err="disk full"\n`);
  });

  it('starts each line with its syslog priority for journald', () => {
    const out = sink(false);
    const logger = createLogger({ format: 'runner', destination: out.stream, journald: true, level: 'debug' });
    logger.debug('d');
    logger.warn('w');
    logger.error('e');
    expect(out.text()).toBe('<7>DEBUG: d\n<4>WARNING: w\n<3>ERROR: e\n');
  });
});
