/** The daemon's last line against an unhandled rejection, in a real process (dist/, `npm run build` first). */
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
