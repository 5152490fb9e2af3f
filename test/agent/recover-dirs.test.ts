/** Which state dirs a restarted runner looks at: its own, never look-alikes a job made in its checkout. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { findJobStateDirs } from '../../src/agent/recover.js';

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
});
