/**
 * A docker job's container (root inside) can write the checkout's `.git`, and the next job of the
 * project fetches into that checkout with git on the runner's machine, as the runner's user. Nothing
 * the container planted may run there.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { jobYaml, makeTrap, plantLines, PLANTS } from '../../helpers/planted-git.js';
import { skipDocker } from './engine.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

let server: TestServer;
let token: string;
useDockerTestServer((s, t) => {
  server = s;
  token = t;
});

describe.skipIf(skipDocker)('host git in a checkout a docker job wrote', () => {
  it.each(PLANTS)('a planted %s never runs when the next job fetches on the host', async (plant) => {
    const trap = await makeTrap();
    const first = await runDockerJob(server, token, jobYaml(plantLines(plant, trap)));
    expect(first.status, first.trace).toBe('success');
    const second = await runDockerJob(server, token, jobYaml(['cat README.md']), { dirs: first.dirs });
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('Fetching changes');
    expect(await trap.ran()).toEqual([]);
  });

  it('the job\'s variables never reach the host\'s git (PATH, GIT_TRACE)', async () => {
    const trap = await makeTrap();
    await mkdir(join(trap.dir, 'pathbin'));
    await writeFile(join(trap.dir, 'pathbin', 'git'), `#!/bin/sh\necho path-git >> ${join(trap.dir, 'ran')}\nexec /usr/bin/git "$@"\n`, { mode: 0o755 });
    const variables = { PATH: `${join(trap.dir, 'pathbin')}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, GIT_TRACE: join(trap.dir, 'git-trace') };
    const job = await runDockerJob(server, token, jobYaml(['cat README.md']), { variables });
    expect(job.status, job.trace).toBe('success');
    expect(await trap.ran()).toEqual([]);
    expect(await readdir(trap.dir)).not.toContain('git-trace');
  });

  it('clones afresh when a job made .git a symlink, and leaves what it pointed at alone', async () => {
    const trap = await makeTrap();
    const before = await readdir(trap.dir);
    const first = await runDockerJob(server, token, jobYaml(['rm -rf .git', `ln -s ${trap.dir} .git`]));
    expect(first.status, first.trace).toBe('success');
    const second = await runDockerJob(server, token, jobYaml(['test -d .git && ! test -L .git && echo real-git-dir']), { dirs: first.dirs });
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('.git was a symlink');
    expect(second.trace).toContain('real-git-dir');
    expect(await readdir(trap.dir)).toEqual(before);
  });
});
