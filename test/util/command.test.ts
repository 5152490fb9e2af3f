import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastLine, runCommand } from '../../src/util/command.js';

async function until(predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('runCommand', () => {
  it("keeps the output as written, in the daemon's environment plus env, minus what env unsets", async () => {
    process.env.CI_RUNNER_COMMAND_TEST = 'from the daemon';
    try {
      const result = await runCommand('sh', ['-c', 'echo "$CI_RUNNER_COMMAND_TEST|$ADDED|${UNSET-unset}"; echo warn >&2'], { env: { ADDED: 'added', UNSET: undefined } });
      expect(result).toMatchObject({ failed: false, exitCode: 0, stdout: 'from the daemon|added|unset\n', stderr: 'warn\n' });
    } finally {
      delete process.env.CI_RUNNER_COMMAND_TEST;
    }
  });

  it('runs in cwd with stdin at end of file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'command-cwd-'));
    const result = await runCommand('sh', ['-c', 'pwd; cat; echo eof'], { cwd: dir });
    expect(result.stdout).toBe(`${dir}\neof\n`);
  });

  it('answers a failed exit and a command that cannot start as results, not rejections', async () => {
    const failed = await runCommand('sh', ['-c', 'echo why >&2; exit 3']);
    expect(failed).toMatchObject({ failed: true, exitCode: 3, stderr: 'why\n' });
    const missing = await runCommand('/nonexistent/tool', []);
    expect(missing).toMatchObject({ failed: true, code: 'ENOENT' });
    expect(missing.exitCode).toBeUndefined();
  });

  it('stops a command on abort, with SIGKILL once the grace period is over when it ignores SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'command-abort-'));
    const ready = join(dir, 'ready');
    const controller = new AbortController();
    const running = runCommand('sh', ['-c', `trap '' TERM; touch ${ready}; exec sleep 1020`], { signal: controller.signal, forceKillAfterMs: 200 });
    await until(() => existsSync(ready));
    controller.abort(new Error('job canceled'));
    const result = await running;
    expect(result).toMatchObject({ failed: true, isCanceled: true, isForcefullyTerminated: true, signal: 'SIGKILL' });
  });

  it('stops a command that runs past its timeout with the kill signal asked for', async () => {
    const result = await runCommand('sleep', ['1021'], { timeoutMs: 100, killSignal: 'SIGKILL' });
    expect(result).toMatchObject({ failed: true, timedOut: true, signal: 'SIGKILL' });
  });
});

describe('lastLine', () => {
  it('is the last line with text in it', () => {
    expect(lastLine('first\nlast one  \n\n')).toBe('last one');
    expect(lastLine('')).toBe('');
    expect(lastLine(undefined)).toBe('');
  });
});
