import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/agent/config/schema.js';
import { checkDocker, checkExecutor } from '../../src/agent/executor-check.js';
import { fakeDockerCli } from '../helpers/fake-docker-cli.js';
import { workDirs } from '../cli/helpers.js';

describe('executor availability', () => {
  it('says the docker CLI is missing and how to fix it', async () => {
    const result = await checkDocker('/nonexistent/docker', undefined);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/"\/nonexistent\/docker" was not found; install docker .* or set \[runners\.docker\] cli/) as unknown });
  });

  it("quotes the engine's own error when it does not answer, naming the configured host", async () => {
    const { root } = await workDirs();
    const result = await checkDocker(await fakeDockerCli(root), 'unix:///nope.sock');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toBe('the docker engine at unix:///nope.sock does not answer: Cannot connect to the Docker daemon at unix:///nope.sock. Is the docker daemon running?');
  });

  it.skipIf(!hasDockerCli())('quotes the real docker CLI when nothing listens at the configured host', async () => {
    const { root } = await workDirs();
    const host = `unix://${join(root, 'no-engine.sock')}`;
    const result = await checkDocker('docker', host);
    expect(!result.ok && result.reason).toContain(`Cannot connect to the Docker daemon at ${host}`);
  });

  it('gives up on an engine that hangs', async () => {
    const { root } = await workDirs();
    const result = await checkDocker(await fakeDockerCli(root, { hang: true }), undefined, undefined, 500);
    expect(!result.ok && result.reason).toMatch(/did not answer `.*docker version` within 0\.5 s/);
  });

  it('accepts an answering engine and needs nothing for the shell executor', async () => {
    const { root } = await workDirs();
    const cli = await fakeDockerCli(root);
    await writeFile(join(root, 'engine-up'), '');
    const runners = configSchema.parse({
      runners: [
        { url: 'http://127.0.0.1:1/', token: 'a', executor: 'docker', docker: { cli } },
        { url: 'http://127.0.0.1:1/', token: 'b', executor: 'shell', docker: { cli: '/nonexistent' } },
      ],
    }).runners;
    expect(await checkExecutor(runners[0]!)).toMatchObject({ ok: true, detail: expect.stringMatching(/answers, version 27\.5\.1$/) as unknown });
    expect(await checkExecutor(runners[1]!)).toEqual({ ok: true });
  });
});

function hasDockerCli(): boolean {
  try {
    execFileSync('docker', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
