/**
 * A docker job's container (root inside) can write the checkout's `.git`, and the next job of the
 * project fetches into that checkout with git on the runner's machine, as the runner's user. Nothing
 * the container planted may run there.
 */
import { readdir } from 'node:fs/promises';
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
