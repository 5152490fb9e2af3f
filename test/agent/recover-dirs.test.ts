/** Which state dirs a restarted runner looks at: its own, never look-alikes a job made in its checkout. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { findJobStateDirs } from '../../src/agent/recover.js';
import { shortToken } from '../../src/util/short-token.js';

describe('state dirs of earlier jobs', () => {
  it('are found beside each checkout, not inside one', async () => {
    const builds = await mkdtemp(join(tmpdir(), 'ci-runner-recover-'));
    onTestFinished(() => rm(builds, { recursive: true, force: true }));
    const token = 'abcdefgh-token';
    const slot = join(builds, token.slice(0, 8), '0', 'group');
    const own = join(slot, 'project.tmp', 'build-7');
    // A job can write anything in its checkout, such as something shaped like a state dir.
    const forged = join(slot, 'project', 'evil.tmp', 'build-8');
    await mkdir(own, { recursive: true });
    await mkdir(forged, { recursive: true });
    expect(await findJobStateDirs({ builds_dir: builds, token })).toEqual([own]);
  });

  it('are found in GitLab Runner 19\'s layout (the short token) and in the one before it, never in a GIT_CLONE_PATH checkout', async () => {
    const builds = await mkdtemp(join(tmpdir(), 'ci-runner-recover-'));
    onTestFinished(() => rm(builds, { recursive: true, force: true }));
    const token = 'glrt-t1_abcdefghijklmnop';
    const legacy = join(builds, token.slice(0, 8), '0', 'group', 'project.tmp', 'build-5');
    const shell = join(builds, shortToken(token), '0', 'group', 'project.tmp', 'build-6');
    const docker = join(builds, shortToken(token), 'project-3-concurrent-0', 'group', 'project.tmp', 'build-7');
    // A checkout GIT_CLONE_PATH put in the slot: its `.tmp` beside it says so, whatever a job wrote in it.
    const custom = join(builds, shortToken(token), 'project-3-concurrent-0', 'mine');
    await mkdir(`${custom}.tmp`, { recursive: true });
    await mkdir(join(custom, 'x.tmp', 'build-8'), { recursive: true });
    for (const dir of [legacy, shell, docker]) await mkdir(dir, { recursive: true });
    expect((await findJobStateDirs({ builds_dir: builds, token })).sort()).toEqual([docker, shell, legacy].sort());
  });
});
