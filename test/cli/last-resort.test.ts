/** The daemon's last lines against failures nothing listened for, in a real process (dist/, `npm run build` first). */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const dist = (path: string): string => JSON.stringify(fileURLToPath(new URL(`../../dist/${path}`, import.meta.url)));

describe('keepRunningOnUnhandledRejection', () => {
  it('logs a rejection nothing handled as a bug and keeps the process running', async () => {
    const script = `
      const { keepRunningOnUnhandledRejection } = await import(${dist('cli/last-resort.js')});
      const { createLogger } = await import(${dist('log/index.js')});
      keepRunningOnUnhandledRejection(createLogger({ format: 'json' }));
      Promise.reject(new Error('nobody listens'));
      setTimeout(() => process.stdout.write('still running\\n'), 300);
    `;
    const result = await execa('node', ['--input-type=module', '-e', script], { reject: false });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toBe('still running');
    const line = JSON.parse(result.stderr.trim().split('\n')[0] ?? '{}') as { level: string; msg: string; err?: { message: string } };
    expect(line.level).toBe('error');
    expect(line.msg).toMatch(/^BUG: a promise was rejected and nothing handled it; the runner carries on/);
    expect(line.err?.message).toBe('nobody listens');
  });
});

describe('keepRunningOnStrayConnectionErrors', () => {
  /** A process with the handler that runs `then` once its logger is there. */
  const run = (then: string) =>
    execa('node', ['--input-type=module', '-e', `
      const { keepRunningOnStrayConnectionErrors } = await import(${dist('cli/last-resort.js')});
      const { createLogger } = await import(${dist('log/index.js')});
      const net = await import('node:net');
      keepRunningOnStrayConnectionErrors(createLogger({ format: 'json' }));
      ${then}
    `], { reject: false });

  it('logs a socket error no listener took as a bug and keeps the process running', async () => {
    // As a TLS socket torn down with a write pending reports it, on a socket with no 'error' listener.
    const result = await run(`
      const canceled = Object.assign(new Error('write ECANCELED Canceled because of SSL destruction'), { code: 'ECANCELED', errno: -125, syscall: 'write' });
      new net.Socket().destroy(canceled);
      setTimeout(() => process.stdout.write('still running\\n'), 300);
    `);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toBe('still running');
    const line = JSON.parse(result.stderr.trim().split('\n')[0] ?? '{}') as { level: string; msg: string; err?: { message: string } };
    expect(line.level).toBe('error');
    expect(line.msg).toMatch(/^BUG: a connection failed and nothing listened for its error; the runner carries on/);
    expect(line.err?.message).toBe('write ECANCELED Canceled because of SSL destruction');
  });

  it('still ends the process on any other uncaught exception, with its stack, as Node does', async () => {
    const result = await run(`
      setTimeout(() => { throw new Error('a real bug'); }, 10);
      setTimeout(() => process.stdout.write('still running\\n'), 300);
    `);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('Error: a real bug');
  });
});
