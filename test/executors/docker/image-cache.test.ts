/**
 * One `docker image inspect` per image and engine for the daemon's jobs, not one per job; a pull or a
 * container that could not start makes the next job ask again.
 */
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultServices } from '../../../src/agent/services.js';
import { DockerCli } from '../../../src/executors/docker/cli.js';
import { ensureImage } from '../../../src/executors/docker/image.js';
import { ImageCache } from '../../../src/executors/docker/image-cache.js';
import { silentLogger } from '../../../src/log/index.js';
import { IMAGES, skipDocker } from './engine.js';
import type { TestServer } from '../../helpers/server.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

/** A CLI that records each call's arguments in `<dir>/calls` and answers inspect and pull. */
async function recordingCli(): Promise<{ cli: string; calls: () => Promise<string[]> }> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-image-cache-'));
  const cli = join(dir, 'docker');
  await writeFile(
    cli,
    [
      '#!/bin/sh',
      `echo "$*" >> '${join(dir, 'calls')}'`,
      'case "$1 $2" in',
      '  "image inspect") echo \'"sha256:0123" "" null\'; exit 0 ;;',
      '  "pull "*) echo "Status: Downloaded newer image"; exit 0 ;;',
      'esac',
      'exit 0',
      '',
    ].join('\n'),
  );
  await chmod(cli, 0o755);
  return { cli, calls: async () => (await readFile(join(dir, 'calls'), 'utf8').catch(() => '')).split('\n').filter(Boolean) };
}

const quiet = { log: () => undefined, signal: new AbortController().signal };

describe('image inspect cache', () => {
  it('inspects an image once for two jobs on the same engine, again on another engine', async () => {
    const { cli, calls } = await recordingCli();
    const cache = new ImageCache();
    for (const host of [undefined, undefined, 'tcp://other:2375']) {
      const docker = new DockerCli({ cli, ...(host ? { host } : {}) });
      expect((await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache })).id).toBe('sha256:0123');
    }
    expect((await calls()).filter((c) => c.startsWith('image inspect'))).toHaveLength(2);
  });

  it('inspects again after a pull, and after the entry was dropped', async () => {
    const { cli, calls } = await recordingCli();
    const cache = new ImageCache();
    const docker = new DockerCli({ cli });
    await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache });
    await ensureImage(docker, 'thing:1', ['always'], { ...quiet, cache });
    await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache });
    cache.forget(docker.engine, 'thing:1');
    await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache });
    expect(await calls()).toEqual(['image inspect --format {{json .Id}} {{json .Config.User}} {{json .Config.Entrypoint}} thing:1', 'pull thing:1', expect.stringMatching(/^image inspect/), expect.stringMatching(/^image inspect/)]);
  });

  it('does not trust an entry past its age', async () => {
    const { cli, calls } = await recordingCli();
    const cache = new ImageCache(0);
    const docker = new DockerCli({ cli });
    await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await ensureImage(docker, 'thing:1', ['if-not-present'], { ...quiet, cache });
    expect((await calls()).filter((c) => c.startsWith('image inspect'))).toHaveLength(2);
  });
});

let server: TestServer;
let token: string;
useDockerTestServer((s, t) => {
  server = s;
  token = t;
});

describe.skipIf(skipDocker)('image inspect cache, real engine', () => {
  it('two docker jobs of one daemon on the same image inspect it once', async () => {
    // The real CLI behind a script that records what it was asked.
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-image-cache-'));
    const cli = join(dir, 'docker');
    await writeFile(cli, `#!/bin/sh\necho "$*" >> '${join(dir, 'calls')}'\nexec docker "$@"\n`);
    await chmod(cli, 0o755);
    const services = defaultServices(silentLogger());
    const yaml = `j:\n  image: ${IMAGES.sh}\n  variables:\n    GIT_STRATEGY: none\n  script: ["true"]\n`;
    for (let i = 0; i < 2; i += 1) {
      const job = await runDockerJob(server, token, yaml, { docker: { cli }, services });
      expect(job.status, job.trace).toBe('success');
    }
    const calls = (await readFile(join(dir, 'calls'), 'utf8')).split('\n');
    expect(calls.filter((c) => c.startsWith('image inspect'))).toHaveLength(1);
    expect(calls.filter((c) => c.startsWith('run '))).toHaveLength(2);
  });
});
